/**
 * The options a device's PGlite opens with, wherever it opens (this tab, a tab's database
 * worker): the app's assets, the empty database image where there is no database yet, the file
 * system for IndexedDB, and the start-up parameters.
 */
import { IdbFs, PGlite } from '@electric-sql/pglite';
import { syncingOnlyChanges } from './changed-files-sync.ts';
import type { PgliteAssets } from './pglite-assets.ts';

/**
 * PGlite's start-up parameters for a device: PGlite's own, with 16 MB of shared buffers instead
 * of PostgreSQL's 128 MB. A device database holds one clinician's working set, a few MB; the
 * buffers are zeroed at every start, so the larger size cost a device open about half its time
 * (0.9–1.2 s against 0.4–0.7 s on a server core) and a phone's tab the memory.
 */
const DEVICE_START_PARAMS: readonly string[] = [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB'];

/**
 * PGlite's options for `dataDir` with `assets`: on IndexedDB (`idb://name`), unless the app
 * brings its own file system, PGlite's IDBFS syncing only changes. The empty database image
 * goes only to a data dir that holds no database (`fresh`): PGlite refuses to load an image
 * over one that exists.
 */
export function pgliteOptionsFor(dataDir: string, assets: PgliteAssets = {}, fresh = false): PgliteAssets & { readonly startParams: readonly string[] } {
  const { loadDataDir, ...rest } = assets;
  const options = { ...(fresh && loadDataDir ? { ...rest, loadDataDir } : rest), startParams: DEVICE_START_PARAMS };
  if (!dataDir.startsWith('idb://') || assets.fs !== undefined) return options;
  return { ...options, fs: syncingOnlyChanges(new IdbFs(dataDir.slice('idb://'.length))) };
}
