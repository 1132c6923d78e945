/**
 * `npm run build -w client-lib`: `@fieldchart/client` as a package an app installs, in
 * client-lib/dist (`npm pack ./client-lib/dist` makes the tarball).
 *
 * In the repository the library is consumed from its TypeScript sources (client-lib/package.json
 * exports src/index.ts, and tsx runs it); the installable package is a separate directory with
 * its own package.json, so neither way of using it gets in the other's way:
 *
 * - `browser/index.js` and `node/index.js`: ESM bundles of our code, one per platform. The
 *   package's `#websocket` import is settled at build time, so the browser file never names
 *   `ws` or a Node built-in. @fieldchart/schema (a private workspace, never published) is
 *   bundled in; every npm package stays external and is installed beside the client as a
 *   dependency — PGlite among them, so its WASM and data files stay separate assets in
 *   node_modules/@electric-sql/pglite/dist, never inlined into our code.
 * - `types/`: the declarations of client-lib and of the schema doors it uses, with the
 *   `@fieldchart/schema/<door>` specifiers pointed at the copies beside them.
 * - `package.json`: `exports` with `types`, `browser`, `node` and `default` conditions, and the
 *   client's dependencies less the workspaces.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { build, type Metafile } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const clientDir = path.join(root, 'client-lib');
const ENTRY = 'client-lib/src/index.ts';
/** Where the declarations of the client's entry land under `types/` (tsc keeps the repo layout). */
const TYPES_ENTRY = 'types/client-lib/src/index.d.ts';
/** The schema doors the client imports; their declarations ship inside the package. */
const SCHEMA_DOORS = ['api', 'sync', 'rules', 'routing', 'checklists'] as const;

interface PackageJson {
  name: string;
  version: string;
  description?: string;
  license?: string;
  dependencies?: Record<string, string>;
}

const NODE_BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

const packageName = (specifier: string) => specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/');

/** Every import our bundle leaves to the host must be a declared dependency (or, in Node, a built-in). */
function checkExternals(metafile: Metafile, platform: 'browser' | 'node', dependencies: ReadonlySet<string>): void {
  for (const [file, output] of Object.entries(metafile.outputs)) {
    for (const imp of output.imports) {
      if (!imp.external) continue;
      if (NODE_BUILTINS.has(imp.path)) {
        if (platform === 'browser') throw new Error(`${file} (browser) imports the Node built-in ${imp.path}`);
        continue;
      }
      if (!dependencies.has(packageName(imp.path))) throw new Error(`${file} imports ${imp.path}, which the package does not depend on`);
    }
  }
}

async function bundle(outDir: string, platform: 'browser' | 'node', dependencies: ReadonlySet<string>): Promise<void> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: { index: ENTRY },
    outdir: path.join(outDir, platform),
    bundle: true,
    format: 'esm',
    platform,
    // The browser bundle takes `#websocket`'s `default` (the global WebSocket), the Node one its `node` (`ws`).
    target: platform === 'node' ? 'node20' : 'es2022',
    external: [...dependencies].flatMap((d) => [d, `${d}/*`]),
    sourcemap: true,
    metafile: true,
    logLevel: 'warning',
  });
  checkExternals(result.metafile, platform, dependencies);
}

/**
 * tsc keeps module specifiers as written: relative `.ts` ones become `.js` (what a consumer's
 * resolver maps to the `.d.ts` beside it), and `@fieldchart/schema/<door>` — not a package the
 * app can install — becomes a path to that door's declarations in `types/schema/src/`.
 */
export function rewriteDeclarationSpecifiers(text: string, fileInTypes: string): string {
  const schemaRoot = path.posix.join('types', 'schema', 'src');
  return text.replace(/(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])([^'"]+)\2/g, (whole, lead: string, quote: string, spec: string) => {
    let next = spec;
    const door = /^@fieldchart\/schema\/([\w-]+)$/.exec(spec)?.[1];
    if (door) {
      let rel = path.posix.relative(path.posix.dirname(fileInTypes), path.posix.join(schemaRoot, door, 'index.js'));
      if (!rel.startsWith('.')) rel = `./${rel}`;
      next = rel;
    } else if (spec.startsWith('@fieldchart/') && spec !== '@fieldchart/client') {
      throw new Error(`${fileInTypes} imports ${spec}: only the schema doors ${SCHEMA_DOORS.join(', ')} ship with the client`);
    } else if (/^\.\.?\//.test(spec) && spec.endsWith('.ts')) {
      next = `${spec.slice(0, -3)}.js`;
    }
    return `${lead}${quote}${next}${quote}`;
  });
}

async function declarations(outDir: string): Promise<void> {
  const typesDir = path.join(outDir, 'types');
  const tsconfig = path.join(outDir, 'tsconfig.types.json');
  fs.writeFileSync(
    tsconfig,
    JSON.stringify({
      extends: path.join(root, 'tsconfig.json'),
      compilerOptions: {
        noEmit: false,
        declaration: true,
        emitDeclarationOnly: true,
        rootDir: root,
        outDir: typesDir,
        // An app may have no @types/node and no DOM lib beyond its own: the declarations must
        // not lean on Node's types.
        types: [],
      },
      include: [],
      files: [path.join(root, ENTRY), ...SCHEMA_DOORS.map((d) => path.join(root, 'schema/src', d, 'index.ts'))],
    }),
  );
  try {
    await promisify(execFile)(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', tsconfig], { cwd: root });
  } catch (err) {
    const out = err as { stdout?: string; stderr?: string };
    throw new Error(`declarations failed:\n${out.stdout ?? ''}${out.stderr ?? ''}`);
  } finally {
    fs.rmSync(tsconfig, { force: true });
  }
  const schemaDeclarations = path.join(typesDir, 'schema/src');
  for (const file of fs.readdirSync(typesDir, { recursive: true }).map(String)) {
    if (!file.endsWith('.d.ts')) continue;
    const rel = path.posix.join('types', file.split(path.sep).join('/'));
    const full = path.join(typesDir, file);
    const text = fs.readFileSync(full, 'utf8');
    // The drizzle schema (schema/src/db) is the server's; a declaration reaching it would pull drizzle-orm into the app.
    if (full.startsWith(schemaDeclarations) && /from\s*['"]drizzle-orm/.test(text)) throw new Error(`${rel} imports drizzle-orm`);
    fs.writeFileSync(full, rewriteDeclarationSpecifiers(text, rel));
  }
}

function manifest(client: PackageJson, dependencies: Record<string, string>): Record<string, unknown> {
  return {
    name: client.name,
    version: client.version,
    description: 'Fieldchart client library: typed REST client and offline client (PGlite device database, outbox, websocket sync)',
    // Installed from a tarball by Fieldchart's own apps; not for a public registry.
    private: true,
    license: 'UNLICENSED',
    type: 'module',
    sideEffects: false,
    exports: {
      '.': {
        types: `./${TYPES_ENTRY}`,
        browser: './browser/index.js',
        node: './node/index.js',
        // React Native and other non-Node runtimes with a global WebSocket.
        default: './browser/index.js',
      },
      './package.json': './package.json',
    },
    types: `./${TYPES_ENTRY}`,
    dependencies,
    engines: { node: '>=20.11' },
  };
}

/** Builds the installable package into `outDir` (default client-lib/dist), replacing what was there. */
export async function buildClientPackage(outDir: string = path.join(clientDir, 'dist')): Promise<string> {
  const client = JSON.parse(fs.readFileSync(path.join(clientDir, 'package.json'), 'utf8')) as PackageJson;
  // Workspaces are bundled (their code) and shipped as declarations (their types), never depended on.
  const dependencies = Object.fromEntries(Object.entries(client.dependencies ?? {}).filter(([name]) => !name.startsWith('@fieldchart/')));
  const names = new Set(Object.keys(dependencies));
  fs.rmSync(outDir, { recursive: true, force: true });
  fs.mkdirSync(outDir, { recursive: true });
  await bundle(outDir, 'browser', names);
  await bundle(outDir, 'node', names);
  await declarations(outDir);
  fs.writeFileSync(path.join(outDir, 'package.json'), `${JSON.stringify(manifest(client, dependencies), null, 2)}\n`);
  fs.copyFileSync(path.join(clientDir, 'README.md'), path.join(outDir, 'README.md'));
  return outDir;
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const outArg = process.argv.indexOf('--outdir');
  const out = await buildClientPackage(outArg > 0 && process.argv[outArg + 1] ? path.resolve(process.argv[outArg + 1]!) : undefined);
  process.stdout.write(`built @fieldchart/client in ${path.relative(process.cwd(), out) || '.'} (npm pack ${path.relative(process.cwd(), out) || '.'})\n`);
}
