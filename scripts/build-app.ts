/**
 * The field app (app/): esbuild bundles app/src/main.ts with `@fieldchart/client` for the
 * browser into static files the server serves at /app (server/src/http/field-app.ts):
 *
 * - `index.html`, `manifest.webmanifest`, `icon.svg`, `sw.js`: fixed names, revalidated;
 * - `app-<hash>.js`, `app-<hash>.css`: content-hashed, cached for good;
 * - `pglite.wasm`, `pglite.data`, `initdb.wasm`: PGlite's assets, fetched beside the bundle
 *   (`new URL(<file>, import.meta.url)`), never inlined into the JavaScript;
 * - `empty-device.tar`: the empty device database image (client-lib `makeEmptyDeviceImage`),
 *   fetched by a device's first open only, so not in the service worker's shell.
 *
 * Each compressible file also gets a `.gz` sibling, which the server sends to clients that
 * accept gzip. The service worker's list of files and its cache version come from this build.
 *
 * `npm start` runs it first (prestart, into app/dist); `npm run build` puts it in dist/app.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { makeEmptyDeviceImage } from '../client-lib/src/index.ts';
import { EMPTY_IMAGE_KIND } from '../client-lib/src/storage/pglite-options.ts';
import { pgliteNodeOnly } from './pglite-browser-stub.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const APP = path.join(root, 'app');
const PGLITE_DIST = path.join(root, 'node_modules/@electric-sql/pglite/dist');
export const PGLITE_ASSETS = ['pglite.wasm', 'pglite.data', 'initdb.wasm'] as const;
const STATIC = ['manifest.webmanifest', 'icon.svg'] as const;

export interface FieldAppBuild {
  readonly dir: string;
  /** The bundle's file name (`app-<hash>.js`). */
  readonly script: string;
  /** Bytes of the app's own JavaScript and CSS (everything but PGlite's WASM and data), raw and gzipped. */
  readonly codeBytes: number;
  readonly codeGzipBytes: number;
}

const hash = (data: string | Buffer) => createHash('sha256').update(data).digest('hex').slice(0, 12);

/** The image a device's first open starts from (app/src/main.ts), outside the shell. */
export const EMPTY_DEVICE_IMAGE = 'empty-device.tar';

/**
 * The empty device image and its gzip, made once per PGlite version and initdb parameters (a
 * PGlite initdb and a 30 MB gzip: seconds) and kept in node_modules/.cache for later builds.
 */
async function emptyDeviceImage(): Promise<{ tar: Buffer; gz: Buffer }> {
  const version = (JSON.parse(fs.readFileSync(path.join(PGLITE_DIST, '..', 'package.json'), 'utf8')) as { version: string }).version;
  const cached = path.join(root, 'node_modules/.cache', `fieldchart-empty-device-${version}-${EMPTY_IMAGE_KIND}.tar`);
  if (fs.existsSync(cached) && fs.existsSync(`${cached}.gz`)) return { tar: fs.readFileSync(cached), gz: fs.readFileSync(`${cached}.gz`) };
  const tar = Buffer.from(await (await makeEmptyDeviceImage()).arrayBuffer());
  const gz = gzipSync(tar, { level: 9 });
  fs.mkdirSync(path.dirname(cached), { recursive: true });
  // Renamed into place: a build beside this one never reads half a file.
  for (const [file, body] of [[`${cached}.gz`, gz], [cached, tar]] as const) {
    fs.writeFileSync(`${file}.${process.pid}`, body);
    fs.renameSync(`${file}.${process.pid}`, file);
  }
  return { tar, gz };
}

/** Builds the app into `outDir` (replacing it); answers what it wrote. */
export async function buildFieldApp(outDir: string = path.join(APP, 'dist')): Promise<FieldAppBuild> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: { app: path.join(APP, 'src/main.ts') },
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    bundle: true,
    minify: true,
    sourcemap: false,
    write: false,
    logLevel: 'warning',
    legalComments: 'none',
    plugins: [pgliteNodeOnly],
  });
  const [bundle] = result.outputFiles;
  if (!bundle || result.outputFiles.length !== 1) throw new Error(`expected one bundle file, got ${result.outputFiles.length}`);
  const css = fs.readFileSync(path.join(APP, 'static/app.css'));
  const script = `app-${hash(Buffer.from(bundle.contents))}.js`;
  const style = `app-${hash(css)}.css`;
  const html = fs.readFileSync(path.join(APP, 'static/index.html'), 'utf8').replace('%APP_JS%', script).replace('%APP_CSS%', style);

  const files = new Map<string, Buffer>([
    ['index.html', Buffer.from(html)],
    [script, Buffer.from(bundle.contents)],
    [style, css],
    ...STATIC.map((f) => [f, fs.readFileSync(path.join(APP, 'static', f))] as const),
    ...PGLITE_ASSETS.map((f) => [f, fs.readFileSync(path.join(PGLITE_DIST, f))] as const),
  ]);
  // The shell the worker keeps: every file above, the page by its directory URL ('./').
  const shell = ['./', ...[...files.keys()].filter((f) => f !== 'index.html')];
  const version = hash(Buffer.concat([...files.values()]));
  const worker = `const SHELL = ${JSON.stringify(shell)};\nconst VERSION = ${JSON.stringify(version)};\n${fs.readFileSync(path.join(APP, 'src/sw.js'), 'utf8')}`;
  files.set('sw.js', Buffer.from(worker));
  const image = await emptyDeviceImage();

  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(outDir, { recursive: true });
  for (const [name, body] of files) {
    fs.writeFileSync(path.join(outDir, name), body);
    if (!name.endsWith('.svg') && body.length > 1024) fs.writeFileSync(path.join(outDir, `${name}.gz`), gzipSync(body, { level: 9 }));
  }
  fs.writeFileSync(path.join(outDir, EMPTY_DEVICE_IMAGE), image.tar);
  fs.writeFileSync(path.join(outDir, `${EMPTY_DEVICE_IMAGE}.gz`), image.gz);
  const code = [Buffer.from(bundle.contents), css];
  return {
    dir: outDir,
    script,
    codeBytes: code.reduce((n, b) => n + b.length, 0),
    codeGzipBytes: code.reduce((n, b) => n + gzipSync(b, { level: 9 }).length, 0),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const outArg = process.argv.indexOf('--outdir');
  try {
    const built = await buildFieldApp(outArg > 0 && process.argv[outArg + 1] ? path.resolve(process.argv[outArg + 1]!) : undefined);
    process.stdout.write(`built the field app in ${path.relative(process.cwd(), built.dir) || '.'} (${(built.codeGzipBytes / 1024).toFixed(0)} KiB gzipped without PGlite's WASM)\n`);
  } catch (err) {
    // `npm start` builds the app first (prestart): a failed app build must not keep the API from
    // starting, so there it is a warning (--or-warn): /app serves an earlier build or answers 404.
    if (!process.argv.includes('--or-warn')) throw err;
    process.stderr.write(`warning: the field app was not built (${err instanceof Error ? err.message : String(err)}); /app serves an earlier build, or answers 404\n`);
  }
}
