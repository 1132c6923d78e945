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

/** The live holder of the lock, or null when it is free or its holder died. */
export async function readLock(dataDir: string): Promise<LockInfo | null> {
  let info: LockInfo;
  try {
    info = JSON.parse(await fs.readFile(lockFileOf(dataDir), 'utf8')) as LockInfo;
  } catch {
    return null;
  }
  return typeof info.pid === 'number' && alive(info.pid) ? info : null;
}

export async function acquireLock(
  dataDir: string,
  info: Omit<LockInfo, 'pid' | 'startedAt'>,
  opts: { waitMs?: number } = {},
): Promise<DataDirLock> {
  await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
  const file = lockFileOf(dataDir);
  const mine: LockInfo = { ...info, pid: process.pid, startedAt: new Date().toISOString() };
  const deadline = Date.now() + (opts.waitMs ?? 0);
  for (;;) {
    try {
      // 'wx' is the atomic step: exactly one process creates the file.
      await fs.writeFile(file, JSON.stringify(mine), { flag: 'wx', mode: 0o600 });
      return {
        file,
        async release() {
          const current = await readLock(dataDir);
          if (current?.pid === process.pid) await fs.rm(file, { force: true });
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = await readLock(dataDir);
    if (!holder) {
      // Stale: its holder died (kill -9, power loss). Remove and race for it again.
      await fs.rm(file, { force: true });
      continue;
    }
    if (holder.pid === process.pid) throw new DataDirBusy(holder);
    // A CLI command holds the directory briefly; wait for it. A server is not waited for.
    if (holder.owner === 'server' || Date.now() >= deadline) throw new DataDirBusy(holder);
    await new Promise((r) => setTimeout(r, 100));
  }
}
