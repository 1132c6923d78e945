/**
 * PGlite persists a browser's database with Emscripten's IDBFS after every statement outside a
 * transaction. Each such sync lists every file of the data directory (about a thousand), reads
 * every entry's time back from IndexedDB through a cursor, then writes what differs. A read
 * changes no file, yet paid the whole comparison: 20–60 ms a statement, about a second of the
 * field app's first list from the device database (bench/app-cold-start.ts).
 *
 * Here a file system remembers the files' modification times at its last sync and skips a sync
 * that would find none changed. Any change at all (a write, a checkpoint, a page a read evicted)
 * still syncs, and a sync still stores everything IDBFS finds changed, so IndexedDB after a sync
 * holds what it held before this existed. Times are the ones IDBFS compares (milliseconds), so a
 * change it would miss is missed here too, and nothing else.
 */
import { PGlite } from '@electric-sql/pglite';
import type { PgliteFilesystem } from './pglite-assets.ts';

/** The parts of an Emscripten MEMFS node read here. */
interface FsNode {
  readonly mode: number;
  readonly mtime?: unknown;
  readonly contents?: unknown;
}

interface EmscriptenFs {
  lookupPath(path: string, opts: { follow: boolean }): { node: FsNode };
  isDir(mode: number): boolean;
}

/**
 * Every file and directory under PGlite's data directory with its modification time, or null
 * when the file system is not shaped as expected (then every sync runs, as without this).
 * Walks the in-memory nodes, not paths: 0.2 ms for a thousand files against 3.4 ms through
 * `FS.lstat` (measured in Node).
 */
function fileTimes(pg: unknown): Map<string, number> | null {
  const fs = (pg as { Module?: { FS?: EmscriptenFs } } | undefined)?.Module?.FS;
  if (!fs) return null;
  try {
    const out = new Map<string, number>();
    const stack: Array<[string, FsNode]> = [['', fs.lookupPath(PGlite.paths.PGDATA, { follow: true }).node]];
    while (stack.length > 0) {
      const [dir, node] = stack.pop()!;
      const contents = node.contents;
      if (typeof contents !== 'object' || contents === null) return null;
      for (const [name, child] of Object.entries(contents as Record<string, FsNode>)) {
        const mtime = child.mtime instanceof Date ? child.mtime.getTime() : child.mtime;
        if (typeof mtime !== 'number') return null;
        const path = `${dir}/${name}`;
        out.set(path, mtime);
        if (fs.isDir(child.mode)) stack.push([path, child]);
      }
    }
    return out;
  } catch {
    return null;
  }
}

function sameTimes(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): boolean {
  if (a.size !== b.size) return false;
  for (const [path, t] of a) if (b.get(path) !== t) return false;
  return true;
}

/**
 * `fs` changed to skip a sync that would store nothing; returns it. The file system's own
 * sync runs for every other one, and a failed sync is tried again by the next.
 */
export function syncingOnlyChanges<F extends PgliteFilesystem>(fs: F): F {
  const sync = fs.syncToFs.bind(fs);
  const load = fs.initialSyncFs.bind(fs);
  // PGlite sets the file system's `pg` (protected in its declarations) when it starts.
  const times = () => fileTimes((fs as unknown as { pg?: unknown }).pg);
  let synced: Map<string, number> | null = null;
  fs.initialSyncFs = async () => {
    await load();
    // What was just loaded is what IndexedDB holds.
    synced = times();
  };
  fs.syncToFs = async (relaxedDurability?: boolean) => {
    const now = times();
    if (now && synced && sameTimes(now, synced)) return;
    await sync(relaxedDurability);
    synced = now;
  };
  return fs;
}
