/**
 * `fieldchart seed --demo` as a newcomer runs it: the CLI process on a fresh embedded data dir
 * (migrations applied by the CLI itself), twice.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { runCli } from '../helpers/processes.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-seed-cli-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

test('seed needs --demo (exit 2); seed --demo prints the credentials and is stable when run again', async () => {
  const env = { FIELDCHART_DATA_DIR: dir };
  const bare = await runCli(['seed'], env);
  assert.equal(bare.code, 2, bare.stderr);
  assert.match(bare.stderr, /--demo/);

  const first = await runCli(['seed', '--demo'], env, 240_000);
  assert.equal(first.code, 0, first.stderr);
  assert.match(first.stdout, /demo\.clinician@fieldchart\.example/);
  assert.match(first.stdout, /Password: \S+/);

  const again = await runCli(['--json', 'seed', '--demo'], env, 240_000);
  assert.equal(again.code, 0, again.stderr);
  const result = JSON.parse(again.stdout) as { account_created: boolean; visits: { created: number; total: number }; patients: { created: number } };
  assert.equal(result.account_created, false);
  assert.equal(result.patients.created, 0);
  assert.equal(result.visits.created, 0);
  assert.match(first.stdout, new RegExp(`Visits: ${result.visits.total} \\(${result.visits.total} new\\)`));
});
