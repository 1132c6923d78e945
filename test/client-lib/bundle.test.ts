/**
 * client-lib runs in browsers and React Native: its bundle must hold no server or CLI code,
 * no database driver, and no Node built-in.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const NODE_BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
/** Packages that would mean the server side leaked in. */
const SERVER_PACKAGES = ['drizzle-orm', 'pg', 'postgres', '@electric-sql/pglite', 'argon2', 'fastify', 'graphile-worker', 'nodemailer', 'jose'];

let result: { metafile: Metafile; text: string } | null = null;

async function bundle() {
  if (result) return result;
  const out = await build({
    absWorkingDir: root,
    entryPoints: ['client-lib/src/index.ts'],
    platform: 'browser',
    format: 'esm',
    bundle: true,
    write: false,
    metafile: true,
    logLevel: 'silent',
    // Nothing may be left for the host to resolve.
    external: [],
  });
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
      assert.ok(!NODE_BUILTINS.has(imp.path) && !imp.path.startsWith('node:'), `${file} imports ${imp.path}`);
      assert.notEqual(imp.external, true, `${file} leaves ${imp.path} external`);
    }
  }
  assert.doesNotMatch(text, /\brequire\(\s*["'](node:)?[\w/]+["']\s*\)/, 'the bundle requires a module');
  assert.doesNotMatch(text, /from\s*["']node:/, 'the bundle imports node:');
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
    (p) => !p.includes('node_modules/') && NAMED_Z_IMPORT.test(fs.readFileSync(path.join(root, p), 'utf8')),
  );
  assert.deepEqual(named, [], 'use `import * as z from "zod"` in these');
  // `inputs` lists every file parsed; the output's inputs say which ones kept any code.
  const kept = Object.values(metafile.outputs).flatMap((o) => Object.entries(o.inputs).filter(([, i]) => i.bytesInOutput > 0).map(([p]) => p));
  assert.deepEqual(kept.filter((p) => /node_modules\/zod\/v4\/locales\/(?!en\.js)/.test(p)), []);
});
