/**
 * `npm test`: every test/**\/*.test.ts file under node:test, each file in its own process.
 * With TEST_DATABASE_URL set, the database suites also run on PostgreSQL (see
 * helpers/backends.ts). Extra arguments filter files by substring: `npm test -- accounts`.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(fileURLToPath(import.meta.url));
const filters = process.argv.slice(2);

function walk(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'helpers' || e.name === 'fixtures' ? [] : walk(p);
    return e.name.endsWith('.test.ts') ? [p] : [];
  });
}

const files = walk(root)
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}

console.log(
  `fieldchart tests: ${files.length} files; backends: pglite${process.env.TEST_DATABASE_URL ? ' + postgres' : ''}`,
);
const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    `--test-concurrency=${process.env.TEST_CONCURRENCY ?? '2'}`,
    '--test-reporter=spec',
    '--test-timeout=600000',
    // A file whose tests are done exits, whatever it left open: a test that ran into its bound
    // leaves its client and proxy behind, and the file then held its slot until the 600 s
    // bound (seen in CI: a PostgreSQL dictation test, 180 s, then 420 s of nothing).
    '--test-force-exit',
    ...files,
  ],
  { stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } },
);
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
