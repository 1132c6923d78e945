import { MemoryFS } from '@electric-sql/pglite';

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
