import { MemoryFS } from '@electric-sql/pglite';
import { LeaderChangedError } from '@electric-sql/pglite/worker';

/**
 * What IDBFS's reconcile looks at, for tests that stand in for IndexedDB with PGlite's MemoryFS:
 * every file of the data directory with its modification time.
 */
interface EmscriptenFs {
  readdir(path: string): string[];
  lstat(path: string): { mode: number; mtime: Date };
  isDir(mode: number): boolean;
}

/** `pg` is a MemoryFS's `this.pg` (the PGlite it serves). */
export function dataFileTimes(pg: unknown): Map<string, number> {
  const fs = (pg as { Module: { FS: EmscriptenFs } }).Module.FS;
  const out = new Map<string, number>();
  const walk = (dir: string) => {
    for (const name of fs.readdir(dir)) {
      if (name === '.' || name === '..') continue;
      const p = `${dir}/${name}`;
      const st = fs.lstat(p);
      if (fs.isDir(st.mode)) walk(p);
      else out.set(p, st.mtime.getTime());
    }
  };
  walk('/pglite/data');
  return out;
}

/**
 * MemoryFS that records, at each sync, what IDBFS would have stored (the files' times), and
 * counts the syncs that reached it.
 */
export class SyncRecordingFs extends MemoryFS {
  private stored = new Map<string, number>();
  syncs = 0;
  private files(): Map<string, number> {
    return dataFileTimes(this.pg);
  }
  /** Files changed since the last sync: what a reload now would lose. */
  unsynced(): string[] {
    return [...this.files()].filter(([p, t]) => this.stored.get(p) !== t).map(([p]) => p);
  }
  override async syncToFs(relaxedDurability?: boolean): Promise<void> {
    this.syncs++;
    this.stored = this.files();
    return super.syncToFs(relaxedDurability);
  }
}

/**
 * MemoryFS whose sync after a write (a WAL file changed since the last sync) reports, once
 * armed, that the tab leading the shared database went (`LeaderChangedError`) — as a
 * follower tab sees a call whose leader closed after committing it: the write is in the
 * database, and the caller cannot know it. Syncs of reads (no WAL change) pass.
 */
export class LeaderGoesFs extends MemoryFS {
  private seen = new Map<string, number>();
  private skip: number | null = null;
  /** Syncs that reported the leader gone. */
  failed = 0;
  /** The write-carrying sync after `skip` more of them reports the leader gone. */
  arm(skip = 0): void {
    this.skip = skip;
  }
  override async syncToFs(relaxedDurability?: boolean): Promise<void> {
    const files = dataFileTimes(this.pg);
    const wrote = [...files].some(([p, t]) => p.includes('/pg_wal/') && this.seen.get(p) !== t);
    this.seen = files;
    await super.syncToFs(relaxedDurability);
    if (this.skip === null || !wrote) return;
    if (this.skip > 0) return void this.skip--;
    this.skip = null;
    this.failed++;
    throw new LeaderChangedError();
  }
}
