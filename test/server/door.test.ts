/**
 * The server's door (`@fieldchart/server`, server/src/index.ts) stays cheap to import: the
 * CLI imports it for every command, `--help` and the AI commands included, so the database
 * drivers, Fastify, the job worker and the services must load only when a function that needs
 * them is called. A child process records every module it loads (a loader hook) to check.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '../helpers/processes.ts';

const heavy = [
  '/node_modules/fastify/',
  '/node_modules/@electric-sql/pglite/',
  '/node_modules/postgres/',
  '/node_modules/pg/',
  '/node_modules/graphile-worker/',
  '/server/src/app.ts',
  '/server/src/services/index.ts',
  '/server/src/db/database.ts',
];

/** The URLs of every module that `script` (an ES module body) loads, in a fresh process. */
function modulesLoadedBy(script: string): string[] {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-door-'));
  const log = path.join(dir, 'loaded.txt');
  const hooks = `import fs from 'node:fs';
    export async function load(url, context, next) {
      fs.appendFileSync(${JSON.stringify(log)}, url + '\\n');
      return next(url, context);
    }`;
  const register = `import { register } from 'node:module';
    register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hooks)}`)});`;
  try {
    execFileSync(
      process.execPath,
      ['--import', 'tsx', '--import', `data:text/javascript,${encodeURIComponent(register)}`, '--input-type=module', '-e', script],
      { cwd: repoRoot, stdio: ['ignore', 'ignore', 'inherit'] },
    );
    return fs.readFileSync(log, 'utf8').split('\n').filter(Boolean);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

test('importing @fieldchart/server loads no driver, no Fastify, no worker and no service', () => {
  const loaded = modulesLoadedBy(`const door = await import('@fieldchart/server'); if (!door.loadConfig) process.exit(3);`);
  assert.ok(loaded.some((u) => u.endsWith('/server/src/index.ts')), 'the hook saw the door itself');
  assert.deepEqual(
    heavy.filter((h) => loaded.some((u) => u.includes(h))),
    [],
    'loaded at import: keep these behind an async function in server/src/index.ts',
  );
});

test('…and loads the database layer once openDatabase is called', () => {
  const loaded = modulesLoadedBy(
    `const { openDatabase } = await import('@fieldchart/server');
     const database = await openDatabase({ kind: 'pglite', dataDir: 'memory://' });
     await database.close();`,
  );
  for (const h of ['/node_modules/@electric-sql/pglite/', '/server/src/db/database.ts']) {
    assert.ok(loaded.some((u) => u.includes(h)), `${h} was not loaded`);
  }
});
