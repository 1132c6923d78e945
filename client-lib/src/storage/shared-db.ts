/**
 * One device database for all of an app's tabs. PGlite on IndexedDB must not be opened by two
 * PGlite instances at once (each keeps the whole database in its own memory and writes its
 * files back over the other's), so in browsers the database lives in a worker of one tab, the
 * leader, and every tab — the leader's too — queries it through PGlite's own
 * `@electric-sql/pglite/worker`: the workers elect their leader with `navigator.locks`, the
 * other tabs' queries and transactions travel over BroadcastChannel, and when the leading tab
 * closes the next worker in line opens the database from IndexedDB.
 */
// No PGlite type in a signature here: PGlite's declarations need Node's and Emscripten's types
// (pglite-assets.ts PgliteFilesystem), and these are the package's public declarations.
import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import { worker } from '@electric-sql/pglite/worker';
import { surelyHoldsNoDatabase } from '#device-key';
import type { PgliteAssets } from './pglite-assets.ts';
import { pgliteOptionsFor } from './pglite-options.ts';

/** Creates the app's database worker: `() => new Worker(new URL('./db-worker.js', import.meta.url), { type: 'module' })`. */
export type DatabaseWorkerFactory = () => Worker;

/** Names shared by every tab of one app on one device database (`dataDir`). */
export function tabNames(dataDir: string): { readonly database: string; readonly open: string; readonly sync: string; readonly channel: string } {
  return {
    database: `fieldchart-db:${dataDir}`,
    open: `fieldchart-open:${dataDir}`,
    sync: `fieldchart-sync:${dataDir}`,
    channel: `fieldchart-tabs:${dataDir}`,
  };
}

/** True where tabs can share a database: `navigator.locks`, BroadcastChannel and workers. */
export function tabsSupported(): boolean {
  const g = globalThis as { navigator?: { locks?: unknown }; BroadcastChannel?: unknown; Worker?: unknown };
  return g.navigator?.locks !== undefined && typeof g.BroadcastChannel === 'function' && typeof g.Worker === 'function';
}

/**
 * The body of the app's database worker file (see client-lib/README.md):
 * `import { runDatabaseWorker } from '@fieldchart/client'; runDatabaseWorker();`
 * The worker opens PGlite only once its tab leads.
 */
export function runDatabaseWorker(assets: PgliteAssets = {}): void {
  void worker({
    // PgliteAssets is PGlite's options by shape (pglite-assets.ts PgliteFilesystem).
    init: async (options) => {
      const dataDir = options.dataDir ?? 'memory://';
      return PGlite.create(dataDir, (await pgliteOptionsFor(dataDir, assets, await surelyHoldsNoDatabase(dataDir))) as PGliteOptions);
    },
  });
}

/** Runs `fn` holding a lock every tab of the app asks for (the first open's key check and migrations). */
export function withTabLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const locks = (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks;
  if (!locks) return fn();
  return locks.request(name, fn) as Promise<T>;
}
