/**
 * client-lib runs in browsers and React Native: its bundle must hold no server or CLI code,
 * no server database driver, no `ws`, and no Node built-in. PGlite is the one database in it:
 * it is the client's own storage.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Metafile } from 'esbuild';
import { PGLITE, browserBuild } from '../helpers/pglite-node-stub.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const NODE_BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
/** Packages that would mean the server side (or Node-only code) leaked in. */
const SERVER_PACKAGES = ['drizzle-orm', 'pg', 'postgres', 'argon2', 'fastify', 'graphile-worker', 'nodemailer', 'jose', 'ws'];

/** The bundle's text without PGlite's modules (esbuild heads each module with a `// path` line). */
function withoutPglite(text: string): string {
  return text
    .split(/\n(?=\/\/ \S+\n)/)
    .filter((section) => !section.startsWith(`// ${PGLITE}`))
    .join('\n');
}

let result: { metafile: Metafile; text: string } | null = null;

async function bundle() {
  if (result) return result;
  const out = await browserBuild(root, 'client-lib/src/index.ts');
  assert.deepEqual(out.errors, []);
  const text = out.outputFiles.map((f) => f.text).join('\n');
  result = { metafile: out.metafile, text };
  return result;
}

test('client-lib bundles for the browser', async () => {
  const { metafile, text } = await bundle();
  assert.ok(Object.keys(metafile.inputs).includes('client-lib/src/index.ts'));
  assert.ok(text.length > 0);
  // The shared contract came along: the client validates with the server's schemas.
  assert.ok(Object.keys(metafile.inputs).some((p) => p.startsWith('schema/src/api/')));
});

test('no server, CLI or database code in the bundle', async () => {
  const { metafile } = await bundle();
  for (const input of Object.keys(metafile.inputs)) {
    assert.ok(!/^(server|cli)\//.test(input), `${input} is server or CLI code`);
    assert.ok(!input.startsWith('schema/src/db/'), `${input} is the drizzle schema`);
    for (const pkg of SERVER_PACKAGES) assert.ok(!input.includes(`node_modules/${pkg}/`), `${input} comes from ${pkg}`);
  }
});

test('no Node built-in is imported', async () => {
  const { metafile, text } = await bundle();
  for (const [file, input] of Object.entries(metafile.inputs)) {
    for (const imp of input.imports) {
      assert.notEqual(imp.external, true, `${file} leaves ${imp.path} external`);
      // PGlite's Node-only loads are dynamic and stubbed (see pgliteNodeOnly).
      if (file.startsWith(PGLITE) && imp.kind === 'dynamic-import') continue;
      assert.ok(!NODE_BUILTINS.has(imp.path) && !imp.path.startsWith('node:'), `${file} imports ${imp.path}`);
    }
  }
  const ours = withoutPglite(text);
  assert.ok(ours.length < text.length, 'PGlite sections were found and set aside');
  assert.doesNotMatch(ours, /\brequire\(\s*["'](node:)?[\w/]+["']\s*\)/, 'the bundle requires a module');
  assert.doesNotMatch(ours, /from\s*["']node:/, 'the bundle imports node:');
});

test('the offline client comes with its browser pieces: PGlite, Yjs, the global WebSocket', async () => {
  const { metafile } = await bundle();
  const inputs = Object.keys(metafile.inputs);
  assert.ok(inputs.some((p) => p.startsWith(PGLITE)), 'PGlite is the storage');
  assert.ok(inputs.some((p) => p.startsWith('node_modules/yjs/')), 'Yjs drafts');
  assert.ok(inputs.includes('client-lib/src/platform/websocket-browser.ts'));
  assert.ok(!inputs.includes('client-lib/src/platform/websocket-node.ts'), 'the Node WebSocket (ws) stays out');
  assert.ok(inputs.includes('client-lib/src/platform/device-key-browser.ts'), 'the device key in IndexedDB');
  assert.ok(!inputs.includes('client-lib/src/platform/device-key-node.ts'), 'the key file (node:fs) stays out');
  assert.ok(!inputs.some((p) => p.startsWith('schema/src/db/')), 'the drizzle schema stays out');
});

/**
 * `import { z } from 'zod'` hands the bundler zod's whole namespace object, locales and all
 * (~450 KB minified instead of ~85 KB); `import * as z from 'zod'` lets it drop what is
 * unused. Every module the client bundles must use the namespace form.
 */
const NAMED_Z_IMPORT = /import\s*\{\s*z\s*\}\s*from\s*['"]zod['"]/;

test('zod is tree-shaken: no foreign-language locales in the bundle', async () => {
  const { metafile } = await bundle();
  const named = Object.keys(metafile.inputs).filter(
    // Virtual modules ('(disabled):fs', 'pglite-node-only:…') have no file to read.
    (p) => !p.includes('node_modules/') && !p.includes(':') && NAMED_Z_IMPORT.test(fs.readFileSync(path.join(root, p), 'utf8')),
  );
  assert.deepEqual(named, [], 'use `import * as z from "zod"` in these');
  // `inputs` lists every file parsed; the output's inputs say which ones kept any code.
  const kept = Object.values(metafile.outputs).flatMap((o) => Object.entries(o.inputs).filter(([, i]) => i.bytesInOutput > 0).map(([p]) => p));
  assert.deepEqual(kept.filter((p) => /node_modules\/zod\/v4\/locales\/(?!en\.js)/.test(p)), []);
});
