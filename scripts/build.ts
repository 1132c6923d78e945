/**
 * `npm run build`: the server and the CLI as plain JavaScript in dist/, so production runs
 * `node dist/server/main.js` (and `node dist/cli/main.js …`) without a TypeScript loader.
 *
 * esbuild bundles our own code (server, CLI, @fieldchart/schema) per program; every npm
 * package stays external and is loaded from node_modules as usual (native addons, PGlite's
 * wasm and graphile-worker's files are found where they are installed). Lazy `import()`s stay
 * lazy (code splitting). The SQL migrations are copied beside the bundles
 * (server/src/db/migrate.ts looks for them there). Type checking is `npm run typecheck`'s job.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { buildFieldApp } from './build-app.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// `--outdir <dir>` (tests build elsewhere); it must lie inside the checkout, so that the
// external packages resolve from its node_modules.
const outArg = process.argv.indexOf('--outdir');
const out = outArg > 0 && process.argv[outArg + 1] ? path.resolve(process.argv[outArg + 1]!) : path.join(root, 'dist');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

fs.rmSync(out, { recursive: true, force: true });

const programs = [
  { name: 'server', entry: 'server/src/main.ts' },
  { name: 'cli', entry: 'cli/src/main.ts' },
];
for (const program of programs) {
  // One build per program: a module both import (the server's main.ts, lazily from `serve`)
  // must not move into a shared chunk, where its entry-point check would no longer match.
  const result = await build({
    absWorkingDir: root,
    // PGlite's thread (server/src/db/pglite-thread-client.ts opens ./pglite-thread.js beside
    // the bundle): both programs open the embedded database.
    entryPoints: { main: program.entry, 'pglite-thread': 'server/src/db/pglite-thread.ts' },
    outdir: path.join(out, program.name),
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    external: [...Object.keys(pkg.dependencies), ...Object.keys(pkg.devDependencies)],
    chunkNames: '[name]-[hash]',
    metafile: true,
    logLevel: 'warning',
  });
  // A devDependency reached from production code would be missing from the image.
  const dev = new Set(Object.keys(pkg.devDependencies));
  const usedDev = new Set<string>();
  for (const file of Object.values(result.metafile.outputs)) {
    for (const imp of file.imports) {
      if (!imp.external) continue;
      const name = imp.path.startsWith('@') ? imp.path.split('/').slice(0, 2).join('/') : imp.path.split('/')[0]!;
      if (dev.has(name)) usedDev.add(name);
    }
  }
  if (usedDev.size > 0) throw new Error(`${program.name} imports devDependencies: ${[...usedDev].join(', ')}`);
}

// The field app's static files, found by the server beside its bundle (server/src/http/field-app.ts).
await buildFieldApp(path.join(out, 'app'));
fs.cpSync(path.join(root, 'server/migrations'), path.join(out, 'migrations'), { recursive: true });
// The CLI reads its version from ../package.json; "type": "module" makes the bundles ESM.
fs.writeFileSync(path.join(out, 'package.json'), `${JSON.stringify({ name: 'fieldchart-dist', version: pkg.version, private: true, type: 'module' }, null, 2)}\n`);
const shown = path.relative(root, out) || '.';
process.stdout.write(`built ${programs.map((p) => `${shown}/${p.name}/main.js`).join(', ')}, ${shown}/app and ${shown}/migrations\n`);
