import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import fsExt from 'fs-ext';

/**
 * PGlite does not lock its directory, and a second process opening it silently loses
 * writes (shared/notes/pglite-facts.md). Whoever opens the embedded database — the server or
 * the CLI — first takes this lock; the CLI reaches a running server through its admin socket
 * instead of opening the directory.
 *
 * The lock is an flock(2) on the lock file, held through an open descriptor for the life of
 * the holder. The kernel drops it when the holder's descriptors close — on exit, on `kill -9`,
 * before the process is even reaped — so a dead holder never blocks a restart: not while it
 * is a zombie, and not when a container restart hands the new server the dead one's pid (a
 * pid check refused both). The file's content (pid, owner, admin socket) only tells others
 * who holds it; it never decides whether it is held.
 */
export interface LockInfo {
  readonly pid: number;
  readonly owner: 'server' | 'cli';
  readonly adminSocket: string | null;
  readonly startedAt: string;
}

export interface DataDirLock {
  readonly file: string;
  release(): Promise<void>;
}

export class DataDirBusy extends Error {
  override readonly name = 'DataDirBusy';
  constructor(readonly holder: LockInfo) {
    super(`The data directory is in use by ${holder.owner} process ${holder.pid}`);
  }
}

export const lockFileOf = (dataDir: string) => path.join(dataDir, 'fieldchart.lock');

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Takes the flock without waiting: true if taken, false if someone else holds it. */
function tryFlock(fd: number, mode: 'exnb' | 'shnb'): boolean {
  try {
    fsExt.flockSync(fd, mode);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EAGAIN' || code === 'EWOULDBLOCK') return false;
    throw err;
  }
}

function openLockFile(file: string): number | null {
  try {
    // libuv opens with O_CLOEXEC: child processes (ffmpeg, workers) never inherit the lock.
    return fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

function parse(raw: string): LockInfo | null {
  try {
    const info = JSON.parse(raw) as LockInfo;
    return typeof info.pid === 'number' && (info.owner === 'server' || info.owner === 'cli') ? info : null;
  } catch {
    return null;
  }
}

/** The held lock's content; the holder writes it right after locking, so briefly wait for it. */
async function holderInfo(file: string): Promise<LockInfo> {
  for (let i = 0; i < 20; i++) {
    const info = parse(await fsp.readFile(file, 'utf8').catch(() => ''));
    if (info) return info;
    await sleep(10);
  }
  // Held by a process that has not written (or cannot write) who it is: busy all the same.
  return { pid: 0, owner: 'server', adminSocket: null, startedAt: new Date(0).toISOString() };
}

/**
 * The live holder of the lock, or null when it is free. A probe with a shared lock: taken, so
 * nobody holds the exclusive one. The probe lasts microseconds; `acquireLock` tolerates it.
 */
export async function readLock(dataDir: string): Promise<LockInfo | null> {
  const file = lockFileOf(dataDir);
  if (!fs.existsSync(file)) return null;
  const fd = openLockFile(file);
  if (fd === null) return null;
  try {
    if (tryFlock(fd, 'shnb')) return null;
  } finally {
    fs.closeSync(fd);
  }
  return holderInfo(file);
}

/**
 * Locks the file at `file` exclusively, or answers null when another descriptor holds it. A
 * lock taken on a file that a releasing holder unlinked meanwhile is worthless (the next
 * opener creates a new file): the descriptor must still be the file at that name.
 */
function lockOnce(file: string): number | null {
  const fd = openLockFile(file);
  if (fd === null) return null;
  let keep = false;
  try {
    if (!tryFlock(fd, 'exnb')) return null;
    const held = fs.fstatSync(fd);
    const named = fs.statSync(file, { throwIfNoEntry: false });
    if (!named || named.ino !== held.ino || named.dev !== held.dev) return -1;
    keep = true;
    return fd;
  } finally {
    if (!keep) fs.closeSync(fd);
  }
}

export async function acquireLock(
  dataDir: string,
  info: Omit<LockInfo, 'pid' | 'startedAt'>,
  opts: { waitMs?: number } = {},
): Promise<DataDirLock> {
  await fsp.mkdir(dataDir, { recursive: true, mode: 0o700 });
  // It holds the database, key files and the admin socket: owner only, even if it existed.
  await fsp.chmod(dataDir, 0o700);
  const file = lockFileOf(dataDir);
  const mine: LockInfo = { ...info, pid: process.pid, startedAt: new Date().toISOString() };
  const deadline = Date.now() + (opts.waitMs ?? 0);
  // A `readLock` probe holds a shared lock for microseconds: a refusal is believed only
  // after it repeats over a few milliseconds.
  let refusals = 0;
  for (;;) {
    const fd = lockOnce(file);
    if (fd === -1) continue; // locked a file released and unlinked meanwhile: again, on the new one
    if (fd !== null) {
      const content = JSON.stringify(mine);
      fs.ftruncateSync(fd, 0);
      fs.writeSync(fd, content, 0, 'utf8');
      fs.fsyncSync(fd);
      let released = false;
      return {
        file,
        async release() {
          if (released) return;
          released = true;
          // Unlinked while still locked, then closed: a contender that opened the old file
          // finds it unlinked and starts again on a new one.
          await fsp.rm(file, { force: true });
          fs.closeSync(fd);
        },
      };
    }
    if (++refusals < 5) {
      await sleep(5);
      continue;
    }
    const holder = await holderInfo(file);
    // A CLI command holds the directory briefly; wait for it. A server is not waited for.
    if (holder.owner === 'server' || Date.now() >= deadline) throw new DataDirBusy(holder);
    refusals = 0;
    await sleep(100);
  }
}
