import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * PGlite does not lock its directory, and a second process opening it silently loses
 * writes (shared/notes/pglite-facts.md). Whoever opens the embedded database — the server or
 * the CLI — first takes this lock file; the CLI reaches a running server through its admin
 * socket instead of opening the directory.
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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The lock file's text, or null when there is none. */
async function readRaw(file: string): Promise<string | null> {
  try {
    return await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

function parse(raw: string): LockInfo | null {
  try {
    const info = JSON.parse(raw) as LockInfo;
    return typeof info.pid === 'number' ? info : null;
  } catch {
    return null;
  }
}

/** The live holder of the lock, or null when it is free or its holder died. */
export async function readLock(dataDir: string): Promise<LockInfo | null> {
  const raw = await readRaw(lockFileOf(dataDir)).catch(() => null);
  const info = raw === null ? null : parse(raw);
  return info && alive(info.pid) ? info : null;
}

/**
 * Creates the lock file with its whole content, or answers false when it exists. The content
 * is written to a private file first and hard-linked into place (atomic, and fails when the
 * name exists), so nobody ever reads a lock file that is still empty and takes it for stale.
 */
async function createExclusive(file: string, content: string): Promise<boolean> {
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  await fs.writeFile(tmp, content, { mode: 0o600 });
  try {
    await fs.link(tmp, file);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'ENOSYS') throw err;
  } finally {
    await fs.rm(tmp, { force: true });
  }
  // No hard links on this file system: an exclusive create, then the content.
  try {
    await fs.writeFile(file, content, { flag: 'wx', mode: 0o600 });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

/**
 * Removes a stale lock (its holder died) without ever removing a live one. Several processes
 * may find the same stale lock at once; a plain "read, see it is stale, delete" lets a slow one
 * delete the fresh lock a faster one has just written, and both go on to open the database.
 * So the removal is reserved: only the process that creates the takeover token named after
 * this exact stale content may delete it, and it deletes only while the file still holds that
 * content (which nobody else can remove or replace meanwhile).
 */
async function removeStale(file: string, raw: string): Promise<void> {
  const token = `${file}.takeover-${createHash('sha256').update(raw).digest('hex').slice(0, 16)}`;
  try {
    await fs.writeFile(token, String(process.pid), { flag: 'wx', mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    // Another process is taking over this stale lock. The step takes milliseconds; a token
    // older than that belongs to a process that died in it, and is cleared.
    const stat = await fs.stat(token).catch(() => null);
    if (stat && Date.now() - stat.mtimeMs > 10_000) await fs.rm(token, { force: true });
    await sleep(10);
    return;
  }
  try {
    if ((await readRaw(file)) === raw) await fs.rm(file, { force: true });
  } finally {
    await fs.rm(token, { force: true });
  }
}

export async function acquireLock(
  dataDir: string,
  info: Omit<LockInfo, 'pid' | 'startedAt'>,
  opts: { waitMs?: number } = {},
): Promise<DataDirLock> {
  await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
  // It holds the database, key files and the admin socket: owner only, even if it existed.
  await fs.chmod(dataDir, 0o700);
  const file = lockFileOf(dataDir);
  const mine: LockInfo = { ...info, pid: process.pid, startedAt: new Date().toISOString() };
  const deadline = Date.now() + (opts.waitMs ?? 0);
  for (;;) {
    if (await createExclusive(file, JSON.stringify(mine))) {
      return {
        file,
        async release() {
          const current = await readLock(dataDir);
          if (current?.pid === process.pid) await fs.rm(file, { force: true });
        },
      };
    }
    const raw = await readRaw(file);
    if (raw === null) continue; // released in between: race for it again
    const holder = parse(raw);
    if (!holder || !alive(holder.pid)) {
      // Stale: its holder died (kill -9, power loss). Remove it and race for it again.
      await removeStale(file, raw);
      continue;
    }
    if (holder.pid === process.pid) throw new DataDirBusy(holder);
    // A CLI command holds the directory briefly; wait for it. A server is not waited for.
    if (holder.owner === 'server' || Date.now() >= deadline) throw new DataDirBusy(holder);
    await sleep(100);
  }
}
