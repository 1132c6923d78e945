/**
 * The device database: PGlite behind a two-method interface. The storage backend follows the
 * `dataDir` prefix, as PGlite decides it: `memory://` (nothing kept), `idb://name`
 * (IndexedDB, browsers), or a directory path (Node).
 */
import { PGlite, type PGliteOptions } from '@electric-sql/pglite';
import { MIGRATIONS } from './local-schema.ts';
import { StorageError, storageErrorOf } from './storage-errors.ts';

/**
 * A PGlite file system (an instance of one of PGlite's `Filesystem` classes), handed to PGlite
 * as it is. Named by its shape, not by PGlite's type: PGlite's declarations need Node's and
 * Emscripten's types, which a browser app type-checking its libraries may not have.
 */
export interface PgliteFilesystem {
  initialSyncFs(): Promise<void>;
  syncToFs(relaxedDurability?: boolean): Promise<void>;
  closeFs(): Promise<void>;
}

/** What an app may hand PGlite: its own copies of the WASM and data assets, or its own file system. */
export interface PgliteAssets {
  /** `pglite.wasm`, compiled (`WebAssembly.compileStreaming(fetch(url))`). */
  readonly pgliteWasmModule?: WebAssembly.Module;
  /** `initdb.wasm`, compiled. */
  readonly initdbWasmModule?: WebAssembly.Module;
  /** The contents of `pglite.data`. */
  readonly fsBundle?: Blob;
  readonly fs?: PgliteFilesystem;
}

export interface OpenLocalDbOptions {
  readonly pglite?: PgliteAssets;
  /**
   * How long opening may take before it counts as blocked. An IndexedDB open that another tab
   * blocks (it holds an older version open) never settles: PGlite's IDBFS does not listen for
   * `blocked`. The first open also creates the database (initdb), a few seconds on a slow phone.
   */
  readonly openTimeoutMs?: number;
  /**
   * Hears every storage failure of the open database. PGlite persists after each statement
   * outside a transaction (IndexedDB: IDBFS writes the changed files), not at COMMIT: a
   * transaction is made in memory, and the statement after it may be the one that meets the
   * full quota and fails — until space is freed, every statement does, as PGlite retries.
   */
  readonly onStorageError?: (err: StorageError) => void;
}

const DEFAULT_OPEN_TIMEOUT_MS = 60_000;

/** Runs SQL; rows come back as plain objects (jsonb parsed, int8 as number). */
export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
}

export interface LocalDb extends Queryable {
  /** One local transaction; PGlite serialises them, so nothing interleaves. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export async function openLocalDb(dataDir: string, options: OpenLocalDbOptions = {}): Promise<LocalDb> {
  const pg = await openPglite(dataDir, options);
  /** Rethrows a storage failure as a {@link StorageError} (and reports it), anything else as it is. */
  const asStorage = (err: unknown): unknown => {
    const storage = storageErrorOf(err);
    if (storage) options.onStorageError?.(storage);
    return storage ?? err;
  };
  const guarded = async <T>(work: Promise<T>): Promise<T> => {
    try {
      return await work;
    } catch (err) {
      throw asStorage(err);
    }
  };
  const wrap = (q: { query: PGlite['query'] }): Queryable => ({
    async query<T>(sql: string, params: readonly unknown[] = []) {
      const res = await guarded(q.query<T>(sql, params as unknown[]));
      return res.rows;
    },
  });
  const db: LocalDb = {
    ...wrap(pg),
    transaction: (fn) => guarded(pg.transaction((tx) => fn(wrap(tx)))),
    close: () => pg.close(),
  };
  try {
    await guarded(migrate(pg));
  } catch (err) {
    await pg.close().catch(() => {});
    throw err;
  }
  return db;
}

async function openPglite(dataDir: string, options: OpenLocalDbOptions): Promise<PGlite> {
  // PgliteAssets is PGlite's options by shape (see PgliteFilesystem).
  const opening = PGlite.create(dataDir, { ...options.pglite } as PGliteOptions);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeoutMs = options.openTimeoutMs ?? DEFAULT_OPEN_TIMEOUT_MS;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StorageError('storage_blocked', `the device database did not open within ${timeoutMs} ms (another tab may hold it open)`)), timeoutMs);
  });
  try {
    return await Promise.race([opening, deadline]);
  } catch (err) {
    // A database that opens after all is closed again: nobody holds it.
    void opening.then((late) => late.close()).catch(() => {});
    if (err instanceof StorageError) throw err;
    throw storageErrorOf(err) ?? new StorageError('storage_unavailable', 'the device database cannot be opened', err);
  } finally {
    clearTimeout(timer);
  }
}

async function migrate(pg: PGlite): Promise<void> {
  await pg.exec('create table if not exists local_schema_version (version integer not null)');
  const rows = (await pg.query<{ version: number }>('select version from local_schema_version')).rows;
  const current = rows[0]?.version ?? 0;
  for (let v = current; v < MIGRATIONS.length; v++) {
    await pg.transaction(async (tx) => {
      await tx.exec(MIGRATIONS[v] as string);
      await tx.query('delete from local_schema_version');
      await tx.query('insert into local_schema_version (version) values ($1)', [v + 1]);
    });
  }
}
