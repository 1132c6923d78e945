/**
 * docs/configuration.md names every environment variable the server, worker and CLI read.
 * The names are found in the source, not listed here: the keys of config.ts's env schema, the
 * `e.X` reads of the parsed environment, and any `process.env.X` / `process.env['X']` /
 * `env.X` read anywhere under server/, cli/, client-lib/ and schema/.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '../helpers/processes.ts';

const SOURCE_DIRS = ['server/src', 'cli/src', 'cli/bin', 'client-lib/src', 'schema/src'];

function sourceFiles(dir: string): string[] {
  const abs = path.join(repoRoot, dir);
  if (!fs.existsSync(abs)) return [];
  return fs.readdirSync(abs, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile() && /\.(ts|js|mjs)$/.test(d.name))
    .map((d) => path.join(d.parentPath, d.name));
}

const NAME = '([A-Z][A-Z0-9_]*)';
const READS = [
  new RegExp(`process\\.env\\.${NAME}`, 'g'),
  new RegExp(`process\\.env\\[['"\`]${NAME}['"\`]\\]`, 'g'),
  new RegExp(`\\benv\\.${NAME}`, 'g'),
  new RegExp(`\\benv\\[['"\`]${NAME}['"\`]\\]`, 'g'),
];

/** Every variable name read by the source. */
function envNamesInSource(): Map<string, string> {
  const found = new Map<string, string>();
  const note = (name: string, file: string) => found.has(name) || found.set(name, path.relative(repoRoot, file));
  for (const file of SOURCE_DIRS.flatMap(sourceFiles)) {
    const text = fs.readFileSync(file, 'utf8');
    for (const re of READS) for (const m of text.matchAll(re)) note(m[1] as string, file);
  }
  const configFile = path.join(repoRoot, 'server/src/config.ts');
  const config = fs.readFileSync(configFile, 'utf8');
  const schema = /const envSchema = z\.object\(\{([\s\S]*?)\n\}\);/.exec(config);
  assert.ok(schema, 'config.ts declares `const envSchema = z.object({ … });`');
  for (const m of (schema[1] as string).matchAll(new RegExp(`^\\s{2}${NAME}:`, 'gm'))) note(m[1] as string, configFile);
  for (const m of config.matchAll(new RegExp(`\\be\\.${NAME}\\b`, 'g'))) note(m[1] as string, configFile);
  return found;
}

function documentedNames(): Set<string> {
  const doc = fs.readFileSync(path.join(repoRoot, 'docs/configuration.md'), 'utf8');
  return new Set([...doc.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1] as string));
}

test('every environment variable read by the source is in docs/configuration.md', () => {
  const read = envNamesInSource();
  // The schema alone has ~120 keys; far fewer means the patterns stopped matching.
  assert.ok(read.size > 100, `only ${read.size} variables found: the source patterns no longer match config.ts`);
  for (const known of ['DATABASE_URL', 'PHI_KEYS', 'LOG_LEVEL', 'PATH']) assert.ok(read.has(known), `${known} not found in the source`);
  const documented = documentedNames();
  const missing = [...read].filter(([name]) => !documented.has(name)).map(([name, file]) => `${name} (${file})`);
  assert.deepEqual(missing, [], `read by the source but not in docs/configuration.md: ${missing.join(', ')}`);
});

test('docs/configuration.md names no variable the source does not read', () => {
  const read = envNamesInSource();
  const doc = fs.readFileSync(path.join(repoRoot, 'docs/configuration.md'), 'utf8');
  // Table rows only: the first cell of each row is the variable.
  const rows = [...doc.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1] as string);
  assert.ok(rows.length > 100, `only ${rows.length} table rows`);
  const stale = rows.filter((name) => !read.has(name));
  assert.deepEqual(stale, [], `documented but never read: ${stale.join(', ')}`);
});
