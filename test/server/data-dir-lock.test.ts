/**
 * The embedded data dir's lock: an flock(2) held by an open descriptor. One holder at a time,
 * a CLI holder is waited for, a server holder is not, and the lock dies with its process —
 * also while the dead holder is still a zombie, and whatever pid the next holder gets.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { acquireLock, DataDirBusy, lockFileOf, readLock } from '../../server/src/db/data-dir-lock.ts';
import { deadPid, repoRoot } from '../helpers/processes.ts';

const dirs: string[] = [];
const tempDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-lock-'));
  dirs.push(d);
  return d;
};
const children = new Set<ChildProcess>();
after(() => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

const writeLock = (dir: string, pid: number, owner: 'server' | 'cli') =>
  fs.writeFileSync(lockFileOf(dir), JSON.stringify({ pid, owner, adminSocket: null, startedAt: new Date().toISOString() }));

/**
 * Another process that takes the lock and keeps it until killed. `detached` with its own
 * reaper-less parent: `sh -c 'node … & exec sleep'` makes the holder a child of `sh`, which
 * never waits for it, so a killed holder stays a zombie for as long as `sh` lives.
 */
async function holder(dir: string, owner: 'server' | 'cli', opts: { zombieParent?: boolean } = {}): Promise<{ pid: number; kill(): void; parent: ChildProcess }> {
  const script = `import { acquireLock } from ${JSON.stringify(path.join(repoRoot, 'server/src/db/data-dir-lock.ts'))};
await acquireLock(${JSON.stringify(dir)}, { owner: ${JSON.stringify(owner)}, adminSocket: null });
process.stdout.write('locked ' + process.pid + '\\n');
setInterval(() => {}, 1 << 30);`;
  const node = `${JSON.stringify(process.execPath)} --import tsx --input-type=module -e ${shellQuote(script)}`;
  // With a zombie parent: sh starts the holder in the background and then sleeps without ever
  // reaping it (exec replaces sh, and sleep does not wait for children it inherited).
  const child = opts.zombieParent
    ? spawn('sh', ['-c', `${node} & exec sleep 600`], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] })
    : spawn('sh', ['-c', `exec ${node}`], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] });
  children.add(child);
  const pid = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const m = /locked (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`lock holder exited ${code}`)));
    setTimeout(() => reject(new Error('lock holder did not lock within 60 s')), 60_000).unref();
  });
  return { pid, parent: child, kill: () => process.kill(pid, 'SIGKILL') };
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Threads of a process still listed by the kernel (a zombie's main thread counts). */
function threadsOf(pid: number): number {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).length;
  } catch {
    return 0;
  }
}

function processState(pid: number): string | null {
  try {
    // /proc/<pid>/stat: "pid (comm) S …"; the state letter follows the last ')'.
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return null;
  }
}

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
  const server = await holder(dir, 'server');
  const t0 = Date.now();
  await assert.rejects(acquireLock(dir, { owner: 'cli', adminSocket: null }, { waitMs: 5_000 }), (err: unknown) => {
    assert.ok(err instanceof DataDirBusy);
    assert.equal(err.holder.pid, server.pid);
    return true;
  });
  assert.ok(Date.now() - t0 < 2_000, 'a server holder is not waited for');
  assert.equal((await readLock(dir))?.pid, server.pid);
  server.kill();

  const dir2 = tempDir();
  const cli = await holder(dir2, 'cli');
  const t1 = Date.now();
  await assert.rejects(acquireLock(dir2, { owner: 'server', adminSocket: null }, { waitMs: 300 }), DataDirBusy);
  assert.ok(Date.now() - t1 >= 300, 'a CLI holder is waited for');
  cli.kill();
});

test('a lock file left by a dead process is no lock: the next holder takes it, exactly one of many contenders', async () => {
  const pid = await deadPid();
  for (let round = 0; round < 30; round++) {
    const dir = tempDir();
    writeLock(dir, pid, 'server');
    assert.equal(await readLock(dir), null, 'nobody holds it');
    // Same process, separate descriptors: flock makes them exclude each other too.
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => acquireLock(dir, { owner: 'cli', adminSocket: null })));
    const winners = results.filter((r) => r.status === 'fulfilled');
    assert.equal(winners.length, 1, `round ${round}: ${winners.length} holders`);
    for (const r of results) if (r.status === 'rejected') assert.ok(r.reason instanceof DataDirBusy);
    assert.equal((await readLock(dir))?.pid, process.pid);
    await (winners[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof acquireLock>>>).value.release();
    assert.deepEqual(fs.readdirSync(dir), [], 'nothing left behind');
  }
});

test('a holder killed with SIGKILL frees the lock at once, even while it is an unreaped zombie', async () => {
  const dir = tempDir();
  const h = await holder(dir, 'server', { zombieParent: true });
  await assert.rejects(acquireLock(dir, { owner: 'server', adminSocket: null }), DataDirBusy);
  h.kill();
  // Wait for the kernel to finish the kill (the process turns into a zombie: its pid stays
  // alive for kill(pid, 0), which is what fooled the old pid check). The main thread shows Z
  // as soon as it has exited; node's other threads may still be exiting, sharing the
  // descriptor table that holds the flock, until they leave /proc/<pid>/task (seen under load
  // in CI: the lock still held 0.7 s after Z). The kill is finished when only the zombie is left.
  const deadline = Date.now() + 30_000;
  const finished = () => processState(h.pid) === 'Z' && threadsOf(h.pid) === 1;
  while (!finished() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  assert.equal(processState(h.pid), 'Z', 'the killed holder is an unreaped zombie');
  assert.equal(threadsOf(h.pid), 1, 'all its other threads have exited');
  process.kill(h.pid, 0); // still "alive" by pid: the old pid check refused here
  const lock = await acquireLock(dir, { owner: 'server', adminSocket: null });
  assert.equal((await readLock(dir))?.pid, process.pid);
  await lock.release();
  h.parent.kill('SIGKILL');
});

test('a stale lock file naming this very pid (a restart in a new pid namespace) is taken', async () => {
  const dir = tempDir();
  writeLock(dir, process.pid, 'server');
  const lock = await acquireLock(dir, { owner: 'server', adminSocket: null });
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
