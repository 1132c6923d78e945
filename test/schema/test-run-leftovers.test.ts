/**
 * The test run's sweep of what a killed run left (test/helpers/leftovers.ts, called by
 * test/run.ts): directories of processes that are gone are removed; a live process's, this
 * process's, other names and malformed pids are kept.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { processIsAlive, sweepLeftovers } from '../helpers/leftovers.ts';

test('removes the directories of gone processes only', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-leftovers-'));
  try {
    // A pid that was just in use and is gone now: a finished child's.
    const gone = spawnSync(process.execPath, ['-e', '']).pid as number;
    assert.equal(processIsAlive(gone), false);
    const names = [`run-${gone}`, `run-${process.ppid}`, `run-${process.pid}`, 'run-abc', 'run-0', 'run--5', `other-${gone}`];
    for (const name of names) {
      fs.mkdirSync(path.join(dir, name));
      fs.writeFileSync(path.join(dir, name, 'file'), 'x');
    }
    assert.deepEqual(sweepLeftovers(dir, 'run-'), [`run-${gone}`]);
    assert.deepEqual(fs.readdirSync(dir).sort(), names.filter((n) => n !== `run-${gone}`).sort());
    // Whoever is alive decides: with every process taken for gone, only this one's own stays.
    assert.deepEqual(sweepLeftovers(dir, 'run-', () => false), [`run-${process.ppid}`]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a directory that does not exist is nothing to sweep', () => {
  assert.deepEqual(sweepLeftovers(path.join(os.tmpdir(), 'fieldchart-no-such-dir-for-leftovers'), 'run-'), []);
});
