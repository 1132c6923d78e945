/**
 * The device database: PGlite behind a two-method interface. The storage backend follows the
 * `dataDir` prefix, as PGlite decides it: `memory://` (nothing kept), `idb://name`
 * (IndexedDB, browsers), or a directory path (Node).
 */
import { PGlite, type PGliteInterface, type PGliteOptions } from '@electric-sql/pglite';
import { LeaderChangedError, PGliteWorker } from '@electric-sql/pglite/worker';
import { deviceKeyStoreFor, firstScreenStoreFor, surelyHoldsNoDatabase } from '#device-key';
import type { DeviceKeyStore } from './device-key.ts';
import { FirstScreenCache } from './first-screen.ts';
import { readAcrossLeaders, writeAcrossLeaders } from './leader-change.ts';
import { MIGRATIONS, type MigrationTx } from './local-schema.ts';
import { metaAd } from './seal-ad.ts';
import { ad, aesGcmCipher, SealBrokenError, type RowCipher } from './row-cipher.ts';
import { StorageError, storageErrorOf } from './storage-errors.ts';
import { tabNames, withTabLock, type DatabaseWorkerFactory } from './shared-db.ts';
import type { PgliteAssets } from './pglite-assets.ts';
import { pgliteOptionsFor } from './pglite-options.ts';
import { startMark } from '../platform/start-marks.ts';

export type { PgliteAssets, PgliteFilesystem } from './pglite-assets.ts';

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
   * outside a transaction (IndexedDB: IDBFS writes the changed files) and `transaction` after
   * its COMMIT: a write that meets the full quota fails — until space is freed, every
   * statement does, as PGlite retries.
   */
  readonly onStorageError?: (err: StorageError) => void;
  /** Where the device key is kept; by default the platform's place for `dataDir` (device-key.ts). */
  readonly keyStore?: DeviceKeyStore;
  /**
   * The cipher made from the device key; AES-256-GCM unless given. Only for measuring what the
   * encryption costs (bench/): never exposed to apps.
   */
  readonly makeCipher?: (key: CryptoKey) => RowCipher;
  /**
   * Browsers, several tabs: the database lives in the leading tab's worker made by this
   * factory and every tab queries it there (shared-db.ts). Without it, this instance owns
   * `dataDir` alone.
   */
  readonly worker?: DatabaseWorkerFactory;
}

const DEFAULT_OPEN_TIMEOUT_MS = 60_000;

/**
 * Statements that leave what reads answer as it is, so the first screen stays (first-screen.ts):
 * a `select`, a `with … select` that names no data-changing command, and the feed's staging of a
 * unit not yet applied (no read looks at `feed_staging`; applying it is a transaction, a write).
 * Anything else counts as a write.
 */
function leavesReadsAsTheyAre(sql: string): boolean {
  return onlyReads(sql) || /^\s*(insert\s+into|delete\s+from)\s+feed_staging\b/i.test(sql);
}

/** A `select`, or a `with … select` that names no data-changing command: safe to run twice. */
function onlyReads(sql: string): boolean {
  if (/^\s*select\b/i.test(sql)) return true;
  return /^\s*with\b/i.test(sql) && !/\b(insert\s+into|update\s+\w+\s+set|delete\s+from|merge\s+into)\b/i.test(sql);
}

/**
 * A transaction whose leading tab closed under it (tabs sharing the database) may or may not
 * have been made: the commit reaches the device's storage only when that tab's worker has
 * written it out. Made again blindly it could be doubled.
 */
export interface TransactionOptions<T> {
  /**
   * Whether it was made, asked of the next leader's database (what the device kept): its
   * result if so, null if not — then it is made again. Without it the transaction rejects with
   * `storage_unavailable`.
   */
  readonly made?: (q: Queryable) => Promise<T | null>;
  /** Made twice it does no harm (a Yjs update, a counter only compared with itself): made again. */
  readonly repeatable?: boolean;
}

/** How `writeAcrossLeaders` tells whether the transaction was made; none: it rejects. */
function madeOf<T>(opts: TransactionOptions<T> | undefined, q: Queryable): (() => Promise<T | null>) | undefined {
  if (opts?.made) return () => opts.made!(q);
  return opts?.repeatable ? async () => null : undefined;
}

/** Runs SQL; rows come back as plain objects (jsonb parsed, int8 as number). */
export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Seals PHI under the device key before it is stored, opens it once read (row-cipher.ts). */
  readonly cipher: RowCipher;
}

export interface LocalDb extends Queryable {
  /** One local transaction; PGlite serialises them, so nothing interleaves. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>, opts?: TransactionOptions<T>): Promise<T>;
  /**
   * Destroys the device key and makes a new one, re-sealing what `meta` keeps sealed. Everything
   * sealed with the old key that is still somewhere in the files (deleted rows not yet
   * vacuumed, old WAL) can no longer be read. Only once the user's data is deleted: a sealed
   * row outside `meta` is an error.
   */
  rotateKey(): Promise<void>;
  /** Another tab rotated the key of the shared database (tab-link.ts `reset`): use the stored one. */
  reloadKey(): Promise<void>;
  /** The app's first screen, kept sealed beside the database and deleted before every write (first-screen.ts). */
  readonly firstScreen: FirstScreenCache;
  close(): Promise<void>;
}

/** Tables that hold sealed values besides `meta`: all empty when the key is rotated. */
const SEALED_TABLES = ['feed_rows', 'feed_staging', 'outbox', 'rejections', 'failures', 'draft_updates', 'dictation_chunks'] as const;

/** The plain text of the key check: a value sealed with the key the database's data is sealed with. */
const KEY_CHECK = new TextEncoder().encode('fieldchart device key');
const KEY_CHECK_AD = ad('device_key_check');

export async function openLocalDb(dataDir: string, options: OpenLocalDbOptions = {}): Promise<LocalDb> {
  const keys = options.keyStore ?? deviceKeyStoreFor(dataDir);
  startMark('fieldchart:db-open');
  const pg = await openPglite(dataDir, options);
  startMark('fieldchart:db-pglite-ready');
  const makeCipher = options.makeCipher ?? aesGcmCipher;
  let cipher: RowCipher;
  // Another tab's writes are not seen here (shared-db.ts): with a worker nothing is kept.
  const firstScreen = new FirstScreenCache(options.worker ? null : firstScreenStoreFor(dataDir), dataDir, () => cipher);
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
  /** `inTransaction`: its transaction as a whole already counts as a write. */
  const wrap = (q: { query: PGliteInterface['query'] }, inTransaction: boolean): Queryable => ({
    async query<T>(sql: string, params: readonly unknown[] = []) {
      const attempt = () => q.query<T>(sql, params as unknown[]);
      const run = () => guarded(!inTransaction && onlyReads(sql) ? readAcrossLeaders(attempt) : attempt());
      const res = inTransaction || leavesReadsAsTheyAre(sql) ? await run() : await firstScreen.write(run);
      return res.rows;
    },
    // The key changes on rotation: every reader asks for the current one.
    get cipher() {
      return cipher;
    },
  });
  const plain = wrap(pg, false);
  const db: LocalDb = {
    query: plain.query,
    get cipher() {
      return cipher;
    },
    transaction: (fn, opts) =>
      firstScreen.write(() =>
        guarded(
          writeAcrossLeaders(async () => {
            const result = await pg.transaction((tx) => fn(wrap(tx, true)));
            // PGlite runs COMMIT while it still counts as inside the transaction, so it does not
            // persist then: in a browser the commit reached IndexedDB only with the next statement
            // outside a transaction, and a reload before that lost it. Persisted here, a resolved
            // transaction is on the device. (Directory and memory: nothing to do.) The transaction
            // has committed, so a failure to persist it is state, not a rejection a caller would
            // answer by making the write again; PGlite retries before the next statement. Not so
            // when the leading tab's worker went meanwhile: what it had not written out is gone
            // with it, and the next leader opens what IndexedDB holds.
            await pg.syncToFs().catch((err: unknown) => {
              if (err instanceof LeaderChangedError) throw err;
              options.onStorageError?.(storageErrorOf(err) ?? new StorageError('storage_unavailable', 'the device database could not be persisted', err));
            });
            return result;
          }, madeOf(opts, plain)),
        ),
      ),
    async rotateKey() {
      const old = cipher;
      for (const t of SEALED_TABLES) {
        const [row] = await plain.query(`select 1 from ${t} limit 1`);
        if (row) throw new Error(`the device key cannot be rotated while ${t} holds sealed rows`);
      }
      const kept = await plain.query<{ key: string; sealed: Uint8Array }>('select key, sealed from meta where sealed is not null');
      const values = await Promise.all(kept.map(async (m) => ({ key: m.key, plain: await old.open(m.sealed, metaAd(m.key)) })));
      // In three steps, so that a crash at any point leaves a database that opens: without a
      // key check (nothing sealed left), a new key is made or the stored one used.
      // Across a change of the leading tab: the deletes are made again; the new key check is
      // made again only if the next leader's database has none (it went in with the values).
      await db.transaction(
        async (tx) => {
          await tx.query('delete from device_key_check');
          await tx.query('delete from meta where sealed is not null');
        },
        { repeatable: true },
      );
      await keys.wipe();
      cipher = makeCipher(await keys.create());
      await db.transaction(
        async (tx) => {
          await tx.query('insert into device_key_check (sealed) values ($1)', [await cipher.seal(KEY_CHECK, KEY_CHECK_AD)]);
          for (const v of values) {
            await tx.query('insert into meta (key, sealed) values ($1, $2) on conflict (key) do nothing', [v.key, await cipher.seal(v.plain, metaAd(v.key))]);
          }
        },
        { made: async (q) => ((await q.query('select 1 from device_key_check limit 1')).length > 0 ? undefined : null) },
      );
    },
    async reloadKey() {
      cipher = await guarded(unlock(pg, keys, makeCipher, () => firstScreen.write(async () => undefined)));
    },
    firstScreen,
    close: () => {
      firstScreen.close();
      return pg.close();
    },
  };
  try {
    const prepare = async () => {
      // A database that changes as it opens (a new key check, a migration) has no first screen.
      const beforeWrite = () => firstScreen.write(async () => undefined);
      cipher = await guarded(unlock(pg, keys, makeCipher, beforeWrite));
      startMark('fieldchart:db-unlocked');
      await guarded(migrate(pg, () => cipher, beforeWrite));
      startMark('fieldchart:db-migrated');
    };
    // Two tabs opening at once would each find no key check, or migrate the same version.
    await (options.worker ? withTabLock(tabNames(dataDir).open, prepare) : prepare());
  } catch (err) {
    await pg.close().catch(() => {});
    throw err;
  }
  return db;
}

async function openPglite(dataDir: string, options: OpenLocalDbOptions): Promise<PGliteInterface> {
  const opening: Promise<PGliteInterface> = options.worker
    ? // This tab's handle: queries go to whichever tab's worker leads (shared-db.ts).
      PGliteWorker.create(options.worker(), { dataDir, id: tabNames(dataDir).database })
    : // PgliteAssets is PGlite's options by shape (see pglite-assets.ts PgliteFilesystem).
      surelyHoldsNoDatabase(dataDir).then(async (fresh) => {
        const pgliteOptions = await pgliteOptionsFor(dataDir, options.pglite, fresh);
        // For an app's trace and the browser tests: this first open started from the image, not initdb.
        if (pgliteOptions.loadDataDir) startMark('fieldchart:db-from-image');
        return PGlite.create(dataDir, pgliteOptions as PGliteOptions);
      });
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

/**
 * The device key of this database: the stored one, which must open the key check; or, when
 * nothing is sealed yet (no key check), the stored one or a new one. A key check without a
 * key that opens it means the sealed data cannot be read: `storage_key_lost`.
 */
async function unlock(pg: PGliteInterface, keys: DeviceKeyStore, makeCipher: (key: CryptoKey) => RowCipher, beforeWrite: () => Promise<void>): Promise<RowCipher> {
  await pg.exec('create table if not exists device_key_check (sealed bytea not null)');
  const [check] = (await pg.query<{ sealed: Uint8Array }>('select sealed from device_key_check')).rows;
  let key: CryptoKey | null;
  try {
    key = await keys.load();
  } catch (err) {
    throw new StorageError('storage_unavailable', `the device key cannot be read (${keys.where})`, err);
  }
  if (check) {
    const lost = new StorageError('storage_key_lost', `the device database is sealed with a key that is not in ${keys.where}`);
    if (!key) throw lost;
    const cipher = makeCipher(key);
    try {
      await cipher.open(check.sealed, KEY_CHECK_AD);
    } catch (err) {
      if (err instanceof SealBrokenError) throw lost;
      throw err;
    }
    return cipher;
  }
  const cipher = makeCipher(key ?? (await keys.create()));
  await beforeWrite();
  await pg.query('insert into device_key_check (sealed) values ($1)', [await cipher.seal(KEY_CHECK, KEY_CHECK_AD)]);
  return cipher;
}

async function migrate(pg: PGliteInterface, cipher: () => RowCipher, beforeWrite: () => Promise<void>): Promise<void> {
  await pg.exec('create table if not exists local_schema_version (version integer not null)');
  const rows = (await pg.query<{ version: number }>('select version from local_schema_version')).rows;
  const current = rows[0]?.version ?? 0;
  if (current < MIGRATIONS.length) await beforeWrite();
  const setVersion = async (q: Pick<PGliteInterface, 'query'>, v: number) => {
    await q.query('delete from local_schema_version');
    await q.query('insert into local_schema_version (version) values ($1)', [v]);
  };
  for (let v = current; v < MIGRATIONS.length; v++) {
    const m = MIGRATIONS[v]!;
    if (typeof m === 'object' && 'outsideTransaction' in m) {
      // VACUUM cannot run in a transaction; it is safe to run again if the version is not stored.
      // A scrub of what earlier versions left in clear has nothing to find in a database this
      // open created (version 0: no table, no row, ever): in a browser its checkpoints and new
      // log segments, each stored whole in IndexedDB, were half a first open's migrations.
      if (!(m.scrubsOldValues && current === 0)) for (const sql of m.outsideTransaction) await pg.exec(sql);
      await setVersion(pg, v + 1);
      continue;
    }
    await pg.transaction(async (tx) => {
      if (typeof m === 'string') await tx.exec(m);
      else {
        const mtx: MigrationTx = {
          exec: async (sql) => void (await tx.exec(sql)),
          query: async <T>(sql: string, params: readonly unknown[] = []) => (await tx.query<T>(sql, params as unknown[])).rows,
          cipher: cipher(),
        };
        await m.run(mtx);
      }
      await setVersion(tx, v + 1);
    });
  }
}
