/**
 * What a test run killed outright (SIGKILL) leaves behind: directories named `<prefix><pid>`.
 * The next run removes those whose process is gone; a live run's (another `npm test` in the
 * same checkout) and its own are kept.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Whether a process is running (signal 0 probes without signalling). */
export function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** Removes `dir`'s entries `<prefix><pid>` of processes that are gone; returns their names. */
export function sweepLeftovers(dir: string, prefix: string, isAlive: (pid: number) => boolean = processIsAlive): string[] {
  const removed: string[] = [];
  for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(name.slice(prefix.length));
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || isAlive(pid)) continue;
    fs.rmSync(path.join(dir, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}
