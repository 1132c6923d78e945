/**
 * The run's test files are bundled (test/helpers/test-bundle.ts): a bundled module must see its
 * own source's location, keep its names, and its stacks must name the TypeScript.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { bundledPath, bundleTests, sourceOfBundled, withSourceMeta } from '../helpers/test-bundle.ts';

const repoRoot = path.resolve(import.meta.dirname, '..', '..');
const fixtures = path.join(repoRoot, 'test', 'fixtures', 'test-bundle');

test('a module that reads import.meta declares its source location on its first line; others are left as they are', () => {
  const file = '/repo/server/src/a b.ts';
  const text = 'const here = new URL("./x", import.meta.url);\nexport { here };\n';
  const out = withSourceMeta(text, file);
  const [first = '', ...rest] = out.split('\n');
  assert.match(first, /const __sourceImportMetaUrl = "file:\/\/\/repo\/server\/src\/a%20b\.ts";/);
  assert.match(first, /const __sourceImportMetaDirname = "\/repo\/server\/src";/);
  assert.match(first, /const __sourceImportMetaFilename = "\/repo\/server\/src\/a b\.ts";/);
  assert.ok(first.endsWith('const here = new URL("./x", import.meta.url);'), 'the source follows on the same line, so its lines keep their numbers');
  assert.deepEqual(rest, ['export { here };', '']);
  assert.equal(withSourceMeta('export const a = 1;\n', file), 'export const a = 1;\n');
});

test('a bundled file’s path maps back to its source; other paths are kept', () => {
  const out = '/repo/node_modules/.cache/b';
  const bundled = bundledPath('/repo', out, '/repo/test/server/x.test.ts');
  assert.equal(bundled, '/repo/node_modules/.cache/b/test/server/x.test.js');
  assert.equal(sourceOfBundled('/repo', out, bundled), '/repo/test/server/x.test.ts');
  assert.equal(sourceOfBundled('/repo', out, '/elsewhere/y.test.js'), '/elsewhere/y.test.js');
});

test('a bundled module sees its source location, keeps its class names, and its stack names the TypeScript', async (t) => {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), 'fc-test-bundle-'));
  t.after(() => fs.rmSync(outdir, { recursive: true, force: true }));
  const entry = path.join(fixtures, 'where-am-i.ts');
  await bundleTests(repoRoot, [entry], outdir);
  const script = bundledPath(repoRoot, outdir, entry);
  assert.ok(fs.existsSync(script), 'the bundle lies where bundledPath says');

  const { stdout } = await promisify(execFile)(process.execPath, ['--enable-source-maps', script]);
  const seen = JSON.parse(stdout) as Record<string, string>;
  assert.equal(seen.url, pathToFileURL(entry).href);
  assert.equal(seen.dirname, fixtures);
  assert.equal(seen.filename, entry);
  assert.equal(seen.sibling, pathToFileURL(path.join(fixtures, 'sibling.ts')).href, 'an imported module keeps its own');
  assert.equal(seen.errorName, 'NamedError');
  assert.equal(seen.words, 'import.meta.url', 'a string is not rewritten');
  assert.match(seen.stack ?? '', /where-am-i\.ts:\d+:\d+/, 'the stack is source-mapped to the TypeScript');
});
