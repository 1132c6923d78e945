/**
 * Long CLI work says how far it is. The CLI's stderr here is a pipe, not a terminal, so it
 * prints plain lines (a terminal gets a cli-progress bar instead): seeding, key rotation and
 * backup, run by the CLI itself and — for a rotation — inside a running server, whose progress
 * travels over the admin socket. stdout stays the result alone (`--json` parses).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { backends, seedPgliteDataDir } from '../helpers/backends.ts';
import { killAllServers, runCli, spawnServer } from '../helpers/processes.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-progress-cli-'));
after(async () => {
  await killAllServers();
  fs.rmSync(dir, { recursive: true, force: true });
});
const env = { FIELDCHART_DATA_DIR: dir };

/** The `label: step done/total (pct%)` lines of one step, as numbers. */
function stepLines(stderr: string, label: string, step: string): Array<{ done: number; total: number }> {
  const re = new RegExp(`^${label}: ${step} (\\d+)/(\\d+)(?: \\(\\d+%\\))?$`, 'gm');
  return [...stderr.matchAll(re)].map((m) => ({ done: Number(m[1]), total: Number(m[2]) }));
}

/** A step reported from its start (or first unit) to its end, rising, in a handful of lines. */
function assertStep(stderr: string, label: string, step: string): number {
  const lines = stepLines(stderr, label, step);
  assert.ok(lines.length >= 2, `${label} ${step}: ${lines.length} lines in\n${stderr}`);
  const total = (lines.at(-1) as { total: number }).total;
  assert.ok(total > 0, `${label} ${step}: total ${total}`);
  assert.deepEqual(lines.at(-1), { done: total, total }, `${label} ${step} ends complete`);
  for (let i = 1; i < lines.length; i++) assert.ok((lines[i] as { done: number }).done > (lines[i - 1] as { done: number }).done, `${label} ${step} rises`);
  assert.ok(lines.length <= 12, `${label} ${step}: ${lines.length} lines, more than one a tenth`);
  return total;
}

test('seed, key rotation and backup print plain progress lines on a non-terminal stderr', async () => {
  await seedPgliteDataDir(path.join(dir, 'pgdata'));
  const seeded = await runCli(['--json', 'seed', '--demo'], env, 240_000);
  assert.equal(seeded.code, 0, seeded.stderr);
  const result = JSON.parse(seeded.stdout) as { patients: { total: number }; visits: { total: number } };
  assert.equal(assertStep(seeded.stderr, 'seed', 'patients'), result.patients.total);
  assertStep(seeded.stderr, 'seed', 'visits');
  assert.doesNotMatch(seeded.stderr, /\x1b\[/, 'no terminal escapes on a pipe');

  const rotated = await runCli(['keys', 'rotate', '--batch-size', '10'], env);
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.match(rotated.stdout, /^Rotated /);
  const visits = assertStep(rotated.stderr, 'keys rotate', 'visits');
  assert.ok(visits >= result.visits.total, `${visits} visit rows re-encrypted of ${result.visits.total}`);
  assert.ok(stepLines(rotated.stderr, 'keys rotate', 'visits').length >= 3, 'a line between start and end');
  assertStep(rotated.stderr, 'keys rotate', 'patients');

  const file = path.join(dir, 'b.tgz');
  const backup = await runCli(['backup', file], env);
  assert.equal(backup.code, 0, backup.stderr);
  assert.equal(assertStep(backup.stderr, 'backup', 'copy'), 4);
});

test('a rotation run inside the server reports its progress over the admin socket', async () => {
  const server = spawnServer({ ...env, WORKER_ENABLED: 'false' });
  await server.url(120_000);
  const rotated = await runCli(['--verbose', 'keys', 'rotate', '--batch-size', '10'], env);
  assert.equal(rotated.code, 0, rotated.stderr);
  assert.match(rotated.stderr, /through the admin socket of server process/);
  assertStep(rotated.stderr, 'keys rotate', 'visits');
  assertStep(rotated.stderr, 'keys rotate', 'soap_notes');
  await server.stop();
});

const postgres = backends.find((b) => b.name === 'postgres');
test('on PostgreSQL: seeding and rotation report the same lines', { skip: postgres ? false : 'TEST_DATABASE_URL not set' }, async () => {
  const db = await (postgres as NonNullable<typeof postgres>).open();
  const pgDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-progress-pg-'));
  try {
    const pgEnv = { FIELDCHART_DATA_DIR: pgDir, DATABASE_URL: db.url ?? undefined };
    const seeded = await runCli(['seed', '--demo'], pgEnv, 240_000);
    assert.equal(seeded.code, 0, seeded.stderr);
    assertStep(seeded.stderr, 'seed', 'visits');
    const rotated = await runCli(['--verbose', 'keys', 'rotate', '--batch-size', '10'], pgEnv);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stderr, /connected to PostgreSQL/);
    assertStep(rotated.stderr, 'keys rotate', 'visits');
  } finally {
    await db.drop();
    fs.rmSync(pgDir, { recursive: true, force: true });
  }
});
