/**
 * The embedded data dir's lock file: one holder at a time, a CLI holder is waited for, a
 * server holder is not, and a stale lock (dead holder) is taken over by exactly one contender.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { acquireLock, DataDirBusy, lockFileOf, readLock } from '../../server/src/db/data-dir-lock.ts';
import { deadPid } from '../helpers/processes.ts';

const dirs: string[] = [];
const tempDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-lock-'));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const writeLock = (dir: string, pid: number, owner: 'server' | 'cli') =>
  fs.writeFileSync(lockFileOf(dir), JSON.stringify({ pid, owner, adminSocket: null, startedAt: new Date().toISOString() }));

test('one holder at a time; release frees the directory and leaves nothing behind', async () => {
  const dir = tempDir();
  const lock = await acquireLock(dir, { owner: 'server', adminSocket: path.join(dir, 'admin.sock') });
  const info = await readLock(dir);
  assert.equal(info?.pid, process.pid);
  assert.equal(info?.owner, 'server');
  await assert.rejects(acquireLock(dir, { owner: 'cli', adminSocket: null }), DataDirBusy);
  await lock.release();
  assert.equal(await readLock(dir), null);
  assert.deepEqual(fs.readdirSync(dir), []);
});

test('a live server holder is refused at once; a live CLI holder is waited for until the deadline', async () => {
  const dir = tempDir();
  // The parent of this process stands in for another live process.
  writeLock(dir, process.ppid, 'server');
  const t0 = Date.now();
  await assert.rejects(acquireLock(dir, { owner: 'cli', adminSocket: null }, { waitMs: 5_000 }), (err: unknown) => {
    assert.ok(err instanceof DataDirBusy);
    assert.equal(err.holder.pid, process.ppid);
    return true;
  });
  assert.ok(Date.now() - t0 < 2_000, 'a server holder is not waited for');

  writeLock(dir, process.ppid, 'cli');
  const t1 = Date.now();
  await assert.rejects(acquireLock(dir, { owner: 'server', adminSocket: null }, { waitMs: 300 }), DataDirBusy);
  assert.ok(Date.now() - t1 >= 300, 'a CLI holder is waited for');
});

test('a stale lock is taken over by exactly one of many contenders', async () => {
  const pid = await deadPid();
  for (let round = 0; round < 30; round++) {
    const dir = tempDir();
    writeLock(dir, pid, 'server');
    // Same process: every contender but the winner sees a live holder (itself) and gets DataDirBusy.
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => acquireLock(dir, { owner: 'cli', adminSocket: null })));
    const winners = results.filter((r) => r.status === 'fulfilled');
    assert.equal(winners.length, 1, `round ${round}: ${winners.length} holders`);
    for (const r of results) if (r.status === 'rejected') assert.ok(r.reason instanceof DataDirBusy);
    assert.equal((await readLock(dir))?.pid, process.pid);
    await (winners[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof acquireLock>>>).value.release();
    assert.deepEqual(fs.readdirSync(dir), [], 'no temp or takeover files left');
  }
});

test('an unreadable lock file counts as stale', async () => {
  const dir = tempDir();
  fs.writeFileSync(lockFileOf(dir), '');
  assert.equal(await readLock(dir), null);
  const lock = await acquireLock(dir, { owner: 'cli', adminSocket: null });
  assert.equal((await readLock(dir))?.owner, 'cli');
  await lock.release();
});

test('taking the lock makes the data dir owner-only, even one that existed with wider modes', async () => {
  const dir = tempDir();
  fs.chmodSync(dir, 0o755);
  const lock = await acquireLock(dir, { owner: 'cli', adminSocket: null });
  try {
    assert.equal(fs.statSync(dir).mode & 0o777, 0o700);
  } finally {
    await lock.release();
  }
});
