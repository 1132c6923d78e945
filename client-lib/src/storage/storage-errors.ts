/**
 * The device's storage failing under the client: a full quota or disk, or a database that
 * cannot be opened (a browser in a mode without IndexedDB, or another tab holding an older
 * version of it open, which leaves the open waiting forever). The client turns these into one
 * typed error with a code, and into sync state (`status.lastError.code`) when they happen in
 * the background, instead of raw DOMExceptions or unhandled rejections.
 *
 * How each platform says "full": IndexedDB (under PGlite's IDBFS, which writes after every
 * query) aborts with a DOMException named `QuotaExceededError` (Firefox's older name
 * `NS_ERROR_DOM_QUOTA_REACHED`); Node reports ENOSPC, Emscripten's file systems errno 51;
 * PostgreSQL itself fails with SQLSTATE 53100 (disk_full) when a data file cannot grow.
 */
import { LeaderChangedError } from '@electric-sql/pglite/worker';
import { FieldchartClientError } from '../rest/errors.ts';

export type StorageErrorCode = 'storage_full' | 'storage_blocked' | 'storage_unavailable' | 'storage_key_lost';

/** The device database could not be opened or written. `cause` holds the platform's error. */
export class StorageError extends FieldchartClientError {
  override readonly name = 'StorageError';
  /**
   * `storage_full`: the quota or disk is full; free space, then retry. PGlite stores a write
   * after it is made (the statement after it persists it), so the write that filled the
   * storage resolves and is queued; `status.lastError` says `storage_full`, and it is stored
   * by the first statement that succeeds once there is space — lost if the app closes first.
   * `storage_blocked`: the database did not open in time, most often because another
   * tab holds an older version of it open; `storage_unavailable`: it cannot be opened at all,
   * or (tabs sharing it, `databaseWorker`) the tab that held it closed while a write ran — the
   * write may or may not have been made: read, then retry (reads, queued writes, recordings
   * and draft edits the client makes again itself: storage/leader-change.ts);
   * `storage_key_lost`: the database holds data sealed with a device key that is gone or is
   * not the one stored (a data directory copied without its key file, a cleared key store).
   * That data cannot be read by anyone: remove the database (a new sign-in syncs it again).
   */
  readonly code: StorageErrorCode;

  constructor(code: StorageErrorCode, message: string, cause?: unknown) {
    super(message);
    this.code = code;
    if (cause !== undefined) Object.defineProperty(this, 'cause', { value: cause, enumerable: false });
  }
}

const QUOTA_NAMES = new Set(['QuotaExceededError', 'NS_ERROR_DOM_QUOTA_REACHED']);
/** ENOSPC in Emscripten's errno numbering (PGlite's file systems). */
const EMSCRIPTEN_ENOSPC = 51;
/** PostgreSQL's disk_full. */
const SQLSTATE_DISK_FULL = '53100';

/** Whether `err` (or what it wraps) says the device is out of space. */
export function isStorageFull(err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 3) return false;
  const e = err as { name?: unknown; code?: unknown; errno?: unknown; cause?: unknown };
  if (typeof e.name === 'string' && QUOTA_NAMES.has(e.name)) return true;
  if (e.code === 'ENOSPC' || e.code === SQLSTATE_DISK_FULL) return true;
  if (e.name === 'ErrnoError' && e.errno === EMSCRIPTEN_ENOSPC) return true;
  return isStorageFull(e.cause, depth + 1);
}

/** A failure of a running database, as a {@link StorageError} when it is one; otherwise null. */
export function storageErrorOf(err: unknown): StorageError | null {
  if (err instanceof StorageError) return err;
  if (isStorageFull(err)) return new StorageError('storage_full', 'the device storage is full', err);
  if (err instanceof LeaderChangedError) {
    return new StorageError('storage_unavailable', 'the tab that held the device database closed during the call: it may or may not have been made', err);
  }
  return null;
}

/** The code a background failure is recorded under: the storage's own when it is one. */
export function failureCode(err: unknown, fallback: string): string {
  return storageErrorOf(err)?.code ?? fallback;
}
