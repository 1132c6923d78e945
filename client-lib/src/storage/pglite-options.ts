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
 * initdb's parameters for a device: write-ahead log segments of 1 MB instead of 16 MB. In a
 * browser, IDBFS stores each changed file whole, and every write touches the current segment:
 * each persisted write stored 16 MB in IndexedDB. With 1 MB segments, in headless Chromium on a
 * server core: a timer event 414 → 173 ms, a mileage write 368 → 215 ms, a first sync
 * 2.0 → 0.9 s. Fixed at initdb: a device made before keeps its segments.
 */
export const DEVICE_INITDB_PARAMS: readonly string[] = ['--wal-segsize=1'];

/**
 * What an image made by `makeEmptyDeviceImage` depends on besides PGlite's version: a file name
 * part for those who keep one made (the app build, the tests), so a change of parameters or of
 * the image's contents makes a new one.
 */
export const EMPTY_IMAGE_KIND = [...DEVICE_INITDB_PARAMS, 'no-templates'].join('_').replace(/[^\w=.-]/g, '_');

/**
 * An image of a new, empty device database (PgliteAssets `loadDataDir`), made as a device's
 * initdb would make it, less the `template0` and `template1` databases: a PGlite instance serves
 * its one database, `postgres`, and a device never creates another. Each is as large as the
 * device's own empty database, so without them the image is 15.8 MB and 400 files instead of
 * 30.9 MB and 1,000 — half of what an app ships and a browser's first open stores, file by file,
 * in IndexedDB — and a device's first open in Node took 300 ms of CPU instead of 340 in memory,
 * 430 instead of 570 on disk (three opens each, one machine, 2026-12-05). An app makes it at
 * build time with the PGlite version it ships and serves it as an asset beside PGlite's files.
 */
export async function makeEmptyDeviceImage(): Promise<Blob> {
  const pglite = await PGlite.create('memory://', { initDbStartParams: [...DEVICE_INITDB_PARAMS] });
  try {
    await dropTemplateDatabases(pglite);
    return await pglite.dumpDataDir('none');
  } finally {
    await pglite.close();
  }
}

/**
 * PGlite's options for `dataDir` with `assets`: on IndexedDB (`idb://name`), unless the app
 * brings its own file system, PGlite's IDBFS syncing only changes. The empty database image
 * goes only to a data dir that holds no database (`fresh`): PGlite refuses to load an image
 * over one that exists. An image given as a loader is loaded only then.
 */
export async function pgliteOptionsFor(
  dataDir: string,
  assets: PgliteAssets = {},
  fresh = false,
  imageWaitMs = IMAGE_WAIT_MS,
): Promise<Omit<PgliteAssets, 'loadDataDir'> & { readonly loadDataDir?: Blob; readonly startParams: readonly string[]; readonly initDbStartParams: readonly string[] }> {
  const { loadDataDir, ...rest } = assets;
  const onIdb = dataDir.startsWith('idb://');
  // What IndexedDB lists says nothing of an app's own file system.
  const surelyEmpty = fresh && !(onIdb && assets.fs !== undefined);
  const image = surelyEmpty && loadDataDir ? await loadedImage(loadDataDir, imageWaitMs) : undefined;
  const options = { ...rest, ...(image ? { loadDataDir: image } : {}), startParams: DEVICE_START_PARAMS, initDbStartParams: DEVICE_INITDB_PARAMS };
  if (!onIdb || assets.fs !== undefined) return options;
  return { ...options, fs: syncingOnlyChanges(new IdbFs(dataDir.slice('idb://'.length))) };
}

/**
 * How long a first open waits for an app's image loader before it runs initdb instead: a
 * download on a slow network must not eat the open's own deadline (60 s), where it would fail
 * the open as storage that cannot be opened. initdb takes a few seconds on a phone.
 */
const IMAGE_WAIT_MS = 15_000;

/** The image, or undefined where the app's loader failed or was too slow (its signal then aborts): initdb makes the database. */
async function loadedImage(image: Blob | ((signal: AbortSignal) => Promise<Blob>), waitMs: number): Promise<Blob | undefined> {
  if (typeof image !== 'function') return image;
  const abort = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const tooSlow = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => {
      abort.abort(new Error(`the empty device image did not load within ${waitMs} ms`));
      resolve(undefined);
    }, waitMs);
  });
  try {
    return await Promise.race([image(abort.signal).catch(() => undefined), tooSlow]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Drops initdb's `template0` and `template1` from a fresh PGlite cluster (see
 * `makeEmptyDeviceImage`). The cluster by its shape, not PGlite's type: PGlite's declarations
 * need Node's and Emscripten's types, which a browser app type-checking the package may not have.
 */
export async function dropTemplateDatabases(pglite: { query(sql: string): Promise<unknown> }): Promise<void> {
  await pglite.query("update pg_database set datistemplate = false where datname in ('template0', 'template1')");
  // One statement each: DROP DATABASE runs outside a transaction block.
  await pglite.query('drop database template0');
  await pglite.query('drop database template1');
}
