/**
 * `@fieldchart/client` as an app developer gets it: the built package (scripts/build-client.ts)
 * is packed with `npm pack`, installed into a fresh project, type-checked there by `tsc` as a
 * Node app and as a browser app, run by a plain Node script, and bundled by esbuild for the
 * browser — where any Node built-in, `ws`, or an inlined PGlite WASM would show.
 *
 * The install is offline: the fresh project gets a package-lock.json whose entries (versions,
 * integrity hashes, tarball URLs) come from the repository's own lock, so `npm ci --offline`
 * takes every tarball from the npm cache `npm ci` of the repository filled, and never needs the
 * registry's metadata.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildClientPackage } from '../../scripts/build-client.ts';
import { PGLITE, browserBuild } from '../helpers/pglite-node-stub.ts';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const NODE_BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
const CLIENT = 'node_modules/@fieldchart/client/';

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-client-package-'));
const distDir = path.join(work, 'dist');
const packDir = path.join(work, 'pack');
const appDir = path.join(work, 'app');

/** npm and tsc as a child process sees them outside this repository: no `npm_*` settings of the `npm test` that started us. */
function outsideEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
}

async function sh(file: string, args: readonly string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run(file, [...args], { cwd, env: outsideEnv(), maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${path.basename(file)} ${args.join(' ')} failed in ${cwd}\n${e.stdout ?? ''}${e.stderr ?? ''}`);
  }
}

interface LockEntry {
  version: string;
  integrity?: string;
  resolved?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  [key: string]: unknown;
}

/**
 * A package-lock.json for the app: the client from its tarball, and every package it needs —
 * and @types/node for the Node type check — as locked in the repository (top-level entries, the
 * versions the client is built and tested with).
 */
function appLock(tarball: string, clientManifest: { version: string; dependencies: Record<string, string> }, extra: Record<string, string>) {
  const repoLock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const packages: Record<string, LockEntry> = {};
  // Each dependency resolves as npm placed it in the repository: nested under its dependent
  // when that needs another version than the top level's (proper-lockfile's signal-exit@3
  // beside a top-level signal-exit@4), else at the top level.
  const resolve = (name: string, from: string): string | undefined => {
    for (let at = from; at !== ''; at = at.includes('/node_modules/') ? at.slice(0, at.lastIndexOf('/node_modules/')) : '') {
      if (repoLock.packages[`${at}/node_modules/${name}`]) return `${at}/node_modules/${name}`;
    }
    return repoLock.packages[`node_modules/${name}`] ? `node_modules/${name}` : undefined;
  };
  const queue: Array<{ name: string; from: string }> = [...Object.keys(clientManifest.dependencies), ...Object.keys(extra)].map((name) => ({ name, from: '' }));
  while (queue.length > 0) {
    const { name, from } = queue.shift()!;
    const key = resolve(name, from);
    if (!key) throw new Error(`${name} is not in the repository's package-lock.json`);
    if (packages[key]) continue;
    const entry = repoLock.packages[key]!;
    // Without `resolved`, npm would ask the registry for the package's metadata to find the tarball.
    const base = name.split('/').pop()!;
    packages[key] = { ...entry, resolved: entry.resolved ?? `https://registry.npmjs.org/${name}/-/${base}-${entry.version}.tgz` };
    queue.push(...[...Object.keys(entry.dependencies ?? {}), ...Object.keys(entry.optionalDependencies ?? {})].map((dep) => ({ name: dep, from: key })));
  }
  const integrity = `sha512-${crypto.createHash('sha512').update(fs.readFileSync(tarball)).digest('base64')}`;
  const spec = `file:${path.relative(appDir, tarball)}`;
  return {
    name: 'fieldchart-client-consumer',
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: 'fieldchart-client-consumer', dependencies: { '@fieldchart/client': spec, ...extra } },
      'node_modules/@fieldchart/client': { version: clientManifest.version, resolved: spec, integrity, dependencies: clientManifest.dependencies },
      ...packages,
    },
  };
}

/** Uses the public API the way an app would; the `@ts-expect-error` lines fail the check if the declarations went `any`. */
const APP_TS = `import { createFieldchartClient, createRestClient, ENDPOINTS, localDate, NotSignedInError, StorageError, type FieldchartClient, type PgliteAssets, type SyncStatus, type Visit } from '@fieldchart/client';

export async function open(dataDir: string): Promise<FieldchartClient> {
  const client = await createFieldchartClient({ baseUrl: 'https://api.fieldchart.example', dataDir, backoff: { initialMs: 100 } });
  const status: SyncStatus = client.sync.status;
  const pending: number = status.pending;
  // @ts-expect-error -- \`connected\` is a boolean
  const wrong: string = status.connected;
  void pending;
  void wrong;
  const off = client.sync.on('status', (s) => s.lastError?.code);
  off();
  const visits: Visit[] = await client.visits.today();
  void visits;
  // @ts-expect-error -- dataDir is required
  await createFieldchartClient({ baseUrl: 'https://api.fieldchart.example' });
  return client;
}

export const today: string = localDate(new Date(), 'America/Chicago');
export const rest = createRestClient({ baseUrl: 'https://api.fieldchart.example' });
export const parsed = ENDPOINTS.signIn.response.safeParse({});
export const notSignedIn: Error = new NotSignedInError();
export const isFull = (err: unknown): boolean => err instanceof StorageError && err.code === 'storage_full';
export const assets: PgliteAssets = { fsBundle: new Blob([]) };
`;

/** Plain ESM, no loader: what \`node main.mjs\` in the app runs. */
const MAIN_MJS = `import { createFieldchartClient, ENDPOINTS } from '@fieldchart/client';

const client = await createFieldchartClient({ baseUrl: 'http://127.0.0.1:9', dataDir: 'memory://' });
const status = client.sync.status;
const visits = await client.visits.today();
// The shared contract's zod schemas came along in the bundle.
const contract = ENDPOINTS.signIn.response.safeParse({ data: {} }).success;
await client.close();
process.stdout.write(JSON.stringify({ status, visits: visits.length, contract, entry: import.meta.resolve('@fieldchart/client') }));
`;

let manifest: { version: string; dependencies: Record<string, string>; exports: Record<string, Record<string, string>> };

before(async () => {
  await buildClientPackage(distDir);
  manifest = JSON.parse(fs.readFileSync(path.join(distDir, 'package.json'), 'utf8')) as typeof manifest;
  fs.mkdirSync(packDir);
  const packed = await sh('npm', ['pack', distDir, '--pack-destination', packDir, '--json'], work);
  const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];
  const tarball = path.join(packDir, filename);

  fs.mkdirSync(path.join(appDir, 'src'), { recursive: true });
  const typesNode = { '@types/node': JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).devDependencies['@types/node'] as string };
  const lock = appLock(tarball, manifest, typesNode);
  fs.writeFileSync(path.join(appDir, 'package.json'), JSON.stringify({ name: lock.name, private: true, type: 'module', dependencies: lock.packages[''].dependencies }, null, 2));
  fs.writeFileSync(path.join(appDir, 'package-lock.json'), JSON.stringify(lock, null, 2));
  await sh('npm', ['ci', '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], appDir);
});

after(() => fs.rmSync(work, { recursive: true, force: true }));

test('the package holds compiled ESM and declarations, and depends on no workspace', () => {
  const installed = path.join(appDir, CLIENT);
  const files = (fs.readdirSync(installed, { recursive: true }) as string[]).map((f) => f.split(path.sep).join('/'));
  assert.deepEqual(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')), [], 'no TypeScript sources');
  for (const f of ['browser/index.js', 'node/index.js', 'types/client-lib/src/index.d.ts', 'types/schema/src/sync/index.d.ts', 'README.md']) assert.ok(files.includes(f), f);
  const pkg = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')) as typeof manifest;
  assert.deepEqual(Object.keys(pkg.exports['.']!), ['types', 'browser', 'node', 'default']);
  assert.deepEqual(Object.keys(pkg.dependencies).filter((d) => d.startsWith('@fieldchart/')), []);
  assert.ok(!fs.existsSync(path.join(appDir, 'node_modules/@fieldchart/schema')), 'the schema is compiled in, not installed');
  // Our JS imports only what the package depends on (the schema is inside).
  for (const f of ['browser/index.js', 'node/index.js']) {
    const text = fs.readFileSync(path.join(installed, f), 'utf8');
    assert.doesNotMatch(text, /from\s*["']@fieldchart\//, `${f} imports a workspace`);
  }
});

test('a TypeScript app type-checks against the public API, as a Node app and as a browser app', async () => {
  fs.writeFileSync(path.join(appDir, 'src/app.ts'), APP_TS);
  const common = { strict: true, noEmit: true, target: 'ES2022', skipLibCheck: false, noUncheckedIndexedAccess: true, exactOptionalPropertyTypes: true };
  const configs = {
    // Node: NodeNext resolution, @types/node, no DOM. Yjs's own declarations name DOM types
    // (Document, Node), so libraries go unchecked here; the browser check covers ours.
    'tsconfig.node.json': { compilerOptions: { ...common, skipLibCheck: true, module: 'NodeNext', moduleResolution: 'NodeNext', lib: ['ES2023'], types: ['node'] }, files: ['src/app.ts'] },
    // A browser app: bundler resolution, the DOM, no Node types at all; every declaration checked.
    'tsconfig.browser.json': { compilerOptions: { ...common, module: 'ESNext', moduleResolution: 'Bundler', lib: ['ES2023', 'DOM', 'DOM.Iterable'], types: [] }, files: ['src/app.ts'] },
  };
  const tsc = path.join(root, 'node_modules/typescript/bin/tsc');
  for (const [name, config] of Object.entries(configs)) {
    fs.writeFileSync(path.join(appDir, name), JSON.stringify(config, null, 2));
    await sh(process.execPath, [tsc, '-p', name], appDir);
  }
});

test('a Node script imports the package, opens a client on memory:// and reads sync.status', async () => {
  fs.writeFileSync(path.join(appDir, 'main.mjs'), MAIN_MJS);
  const { stdout } = await sh(process.execPath, ['main.mjs'], appDir);
  const out = JSON.parse(stdout) as { status: Record<string, unknown>; visits: number; contract: boolean; entry: string };
  // The `node` condition: the build that brings `ws` (Node 20 has no global WebSocket).
  assert.ok(out.entry.endsWith(`/${CLIENT}node/index.js`), out.entry);
  assert.deepEqual(out.status, {
    signedIn: false,
    connected: false,
    uploading: false,
    downloading: false,
    current: false,
    pending: 0,
    failed: 0,
    lastSyncedAt: null,
    lastError: null,
    // Nobody signed in on this device yet: the client waits for signIn.
    halted: 'signed_out',
  });
  assert.equal(out.visits, 0);
  assert.equal(out.contract, false, 'the sign-in response schema rejects an empty body');
});

test('an esbuild browser build of the package has no Node built-in and leaves PGlite\'s WASM a separate asset', async () => {
  fs.writeFileSync(path.join(appDir, 'src/browser-entry.js'), `export { createFieldchartClient } from '@fieldchart/client';\n`);
  const out = await browserBuild(appDir, 'src/browser-entry.js', 'out');
  assert.deepEqual(out.errors, []);
  const inputs = Object.keys(out.metafile.inputs);
  assert.ok(inputs.includes(`${CLIENT}browser/index.js`), 'the `browser` condition chose the browser build');
  assert.ok(!inputs.includes(`${CLIENT}node/index.js`));
  assert.deepEqual(inputs.filter((p) => p.startsWith('node_modules/ws/')), [], 'ws stays out');
  for (const [file, input] of Object.entries(out.metafile.inputs)) {
    for (const imp of input.imports) {
      assert.notEqual(imp.external, true, `${file} leaves ${imp.path} external`);
      // PGlite's own Node-only loads are dynamic and stubbed, as by every browser bundler.
      if (file.startsWith(PGLITE) && imp.kind === 'dynamic-import') continue;
      assert.ok(!NODE_BUILTINS.has(imp.path) && !imp.path.startsWith('node:'), `${file} imports ${imp.path}`);
    }
  }
  // The WASM and data files are fetched at run time by URL, never bundled or inlined.
  assert.deepEqual(inputs.filter((p) => /\.(wasm|data)$/.test(p)), []);
  assert.deepEqual(out.outputFiles.map((f) => path.extname(f.path)), ['.js']);
  const text = out.outputFiles[0]!.text;
  for (const asset of ['pglite.wasm', 'pglite.data', 'initdb.wasm']) assert.match(text, new RegExp(`new URL\\(\\s*["'](\\./)?${asset.replace('.', '\\.')}["']`), asset);
  assert.ok(text.length < 4_000_000, `bundle is ${text.length} bytes: something large was inlined`);
});
