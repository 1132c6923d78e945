/**
 * `fieldchart backup` while the embedded server runs (through its admin socket), then
 * `fieldchart restore` with the server stopped: the restarted server serves the backed-up
 * data, not what was written after the backup.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { seedPgliteDataDir } from '../helpers/backends.ts';
import { killAllServers, runCli, spawnServer, apiRequest as http } from '../helpers/processes.ts';
import { newAccount } from '../helpers/test-server.ts';

const dirs: string[] = [];
after(async () => {
  await killAllServers();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function tempDir(tag: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `fieldchart-${tag}-`));
  dirs.push(d);
  return d;
}


const patientNames = async (base: string, token: string) => {
  const list = await http(base, 'GET', '/patient/my-patients', { token });
  assert.equal(list.status, 200, JSON.stringify(list.body));
  return (list.body.data as Array<{ first_name: string }>).map((p) => p.first_name).sort();
};

test('a backup taken while the server runs restores and is served', async () => {
  const dataDir = tempDir('backup-data');
  const backupFile = path.join(tempDir('backup-out'), 'fieldchart.tar.gz');
  const env = { FIELDCHART_DATA_DIR: dataDir, WORKER_ENABLED: 'false' };
  await seedPgliteDataDir(path.join(dataDir, 'pgdata'));

  let server = spawnServer(env);
  let base = await server.url(120_000);
  const account = newAccount();
  const reg = await http(base, 'POST', '/register', { body: account });
  assert.equal(reg.status, 200, JSON.stringify(reg.body));
  const token = reg.body.data.token as string;
  assert.equal((await http(base, 'POST', '/patient/create', { token, body: { first_name: 'Before', last_name: 'Backup' } })).status, 200);

  const backup = await runCli(['--verbose', 'backup', backupFile], env);
  assert.equal(backup.code, 0, backup.stderr);
  assert.match(backup.stderr, /admin socket/i, 'taken by the running server');
  assert.match(backup.stderr, /^backup: copying the embedded database to /m);
  assert.match(backup.stderr, /^backup: done: [\d.]+ MB in [\d.]+ s$/m);
  assert.equal(backup.stdout.trim(), backupFile);
  assert.equal(fs.statSync(backupFile).mode & 0o777, 0o600);

  // Written after the backup: gone once it is restored.
  assert.equal((await http(base, 'POST', '/patient/create', { token, body: { first_name: 'After', last_name: 'Backup' } })).status, 200);
  assert.deepEqual(await patientNames(base, token), ['After', 'Before']);

  const busy = await runCli(['restore', backupFile], env);
  assert.equal(busy.code, 75, 'a running server holds the data dir');
  assert.match(busy.stderr, /stop the server before restoring/);

  assert.equal((await server.stop()).code, 0);
  const restored = await runCli(['--json', 'restore', backupFile], env);
  assert.equal(restored.code, 0, restored.stderr);
  const result = JSON.parse(restored.stdout) as { restored: string; previous: string };
  assert.equal(result.restored, path.join(dataDir, 'pgdata'));
  assert.ok(fs.existsSync(result.previous), 'the replaced database is kept');
  assert.match(restored.stderr, /^restore: checking /m);
  // Reading the backup is metered (plain lines here: stderr is no terminal), from 0 to the whole file.
  assert.match(restored.stderr, /^restore: check \(MiB\) 0\/\d+ \(0%\)$/m);
  assert.match(restored.stderr, /^restore: check \(MiB\) (\d+)\/\1 \(100%\)$/m);
  assert.match(restored.stderr, /^restore: loading the backup into /m);
  assert.match(restored.stderr, /^restore: restored into /m);

  server = spawnServer(env);
  base = await server.url(120_000);
  // The session, the account and the patient came back with the database (the keys stayed in the data dir).
  assert.deepEqual(await patientNames(base, token), ['Before']);
  const signIn = await http(base, 'POST', '/sign-in', { body: { email: account.email, password: account.password } });
  assert.equal(signIn.status, 200);
  assert.equal((await server.stop()).code, 0);

  const damaged = path.join(path.dirname(backupFile), 'damaged.tar.gz');
  fs.writeFileSync(damaged, fs.readFileSync(backupFile).subarray(0, 1000));
  const refused = await runCli(['restore', damaged], env);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /not a usable backup/);
  assert.ok(fs.existsSync(path.join(dataDir, 'pgdata')), 'the live database is untouched');
});

test('backup on PostgreSQL points to pg_dump', { skip: !process.env.TEST_DATABASE_URL }, async () => {
  const run = await runCli(['backup', path.join(tempDir('backup-pg'), 'x.tar.gz')], { DATABASE_URL: process.env.TEST_DATABASE_URL, FIELDCHART_DATA_DIR: tempDir('backup-pg-data') });
  assert.equal(run.code, 1);
  assert.match(run.stderr, /pg_dump/);
  const restore = await runCli(['restore', 'x.tar.gz'], { DATABASE_URL: process.env.TEST_DATABASE_URL });
  assert.equal(restore.code, 2);
  assert.match(restore.stderr, /pg_restore/);
});
