import fs from 'node:fs/promises';
import path from 'node:path';
import { sql, type SQL } from 'drizzle-orm';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/database.ts';
import { Conflict } from '../../errors.ts';
import { noProgress, type Progress } from '../../progress.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import { indexKeyIdOf, parseKeyFile, phiKeyFileOf, readPhiKeyFile, rotateKeyFile, type PhiKeyFile } from '../../security/phi-keyring.ts';
import type { AuditContext, AuditLog } from '../audit/audit-log.ts';
import { PHI_TABLES, type PhiTable } from '../phi-columns.ts';

/** Operator actions are audited without a user: the CLI or admin socket acted. */
const OPERATOR: AuditContext = { actorUserId: null, organizationId: null, requestId: null };

type Row = Record<string, unknown>;
/** `execute` answers an array on postgres.js and `{rows}` on PGlite. */
const rowsOf = (r: unknown): Row[] => (Array.isArray(r) ? (r as Row[]) : ((r as { rows?: Row[] }).rows ?? []));

export interface ReencryptResult {
  readonly key_id: string;
  /** Values re-encrypted under the current key, per table. */
  readonly reencrypted: Record<string, number>;
  readonly total: number;
  /** The current blind-index key's id (not the key). */
  readonly index_key_id: string;
  /** Patients whose name-search tokens were made again under the current index key. */
  readonly retokenised: number;
  /** Geocode cache entries deleted: keyed under an index key that is no longer current, they could not be found again. */
  readonly geocode_cache_dropped: number;
  /** Values that no key of the ring opens (left as they are; listed, up to 20, in `failed_values`). */
  readonly failed: number;
  /** Where the first `FAILED_VALUES_LISTED` of them are: table, column, row id (never the value). */
  readonly failed_values: FailedValue[];
  readonly batches: number;
}

export interface FailedValue {
  readonly table: string;
  readonly column: string;
  readonly row_id: string;
}

/** What one batch of a pass did: values changed, values no key opens, rows read, the last row's key. */
interface BatchDone<K> {
  readonly done: number;
  readonly failed: FailedValue[];
  readonly rows: number;
  readonly last: K | null;
}

/** At most this many failing values are listed in a result; `failed` counts them all. */
const FAILED_VALUES_LISTED = 20;

export interface KeyStatus {
  readonly current_key_id: string;
  /** The blind-index key: its id, the ids of the previous ones still in the ring, and the rows under another key. */
  readonly index: {
    readonly key_id: string;
    readonly previous_key_ids: string[];
    /** Patients whose name-search tokens are under another index key (0: the previous keys may leave the ring). */
    readonly stale_patients: number;
    readonly stale_geocode_cache: number;
  };
  readonly key_source: 'env' | 'file';
  readonly key_file: string | null;
  readonly keys: Array<{ id: string; current: boolean; in_ring: boolean; values: number }>;
  /** Values under a key id the ring does not hold (should be 0). */
  readonly unknown_key_values: number;
  readonly not_current: number;
}

export type RotateResult =
  | ({ readonly rotated: true; readonly previous_key_id: string; readonly key_file: string } & ReencryptResult)
  | {
      readonly rotated: false;
      readonly reason: 'keys_from_env';
      readonly new_key_id: string;
      /** The PHI_KEYS value to deploy: the current ring plus a new current key. */
      readonly phi_keys: string;
      readonly next_steps: string;
    };

/**
 * PHI key rotation. A new key becomes current (old keys stay in the ring so nothing becomes
 * unreadable), then every value not under it is re-encrypted, in batches of rows, each batch
 * in its own transaction. A batch locks the rows it reads (`for update`) until it has rewritten
 * them, so a rotation can run beside live traffic (a concurrent write waits, then lands under
 * whichever key it used — a later run picks it up), be stopped at any point and run again:
 * it resumes with what is left.
 */
export function createPhiRotation(deps: { db: Db; config: Config; phi: PhiCrypto; audit: AuditLog }) {
  const { db, config, phi, audit } = deps;
  const keySource = config.phiKeys ? 'env' : 'file';
  const keyFile = phiKeyFileOf(config.dataDir);

  const notCurrent = (column: string, prefix: string): SQL =>
    sql`(${sql.identifier(column)} is not null and strpos(${sql.identifier(column)}, ${prefix}) <> 1)`;

  /** One batch of one table: re-encrypt the stale values of up to `batchSize` rows after `after`. */
  async function batch(t: PhiTable, after: string[] | null, batchSize: number): Promise<BatchDone<string[]>> {
    // One reading of the ring for the batch: the rows it selects are the ones it re-encrypts.
    const prefix = currentPrefix();
    const keyCols = sql.join(t.key.map((k) => sql.identifier(k)), sql`, `);
    const stale = staleIn(t, prefix);
    const afterClause = after ? sql`and (${keyCols}) > (${sql.join(after.map((v) => sql`${v}`), sql`, `)})` : sql``;
    const cols = sql.join([...t.key, ...t.columns].map((c) => sql.identifier(c)), sql`, `);
    return db.transaction(async (tx) => {
      const rows = rowsOf(
        await tx.execute(
          sql`select ${cols} from ${sql.identifier(t.table)} where (${stale}) ${afterClause} order by ${keyCols} limit ${batchSize} for update`,
        ),
      );
      let done = 0;
      const failed: FailedValue[] = [];
      for (const row of rows) {
        const key = t.key.map((k) => String(row[k]));
        const rowId = t.rowId(key);
        const where = sql.join(t.key.map((k, i) => sql`${sql.identifier(k)} = ${key[i]}`), sql` and `);
        const sets: SQL[] = [];
        for (const column of t.columns) {
          const stored = row[column];
          if (typeof stored !== 'string' || stored.startsWith(prefix)) continue;
          try {
            const clear = phi.open(stored, t.table, column, rowId);
            sets.push(sql`${sql.identifier(column)} = ${phi.seal(clear, t.table, column, rowId)}`);
          } catch {
            failed.push({ table: t.table, column, row_id: rowId });
          }
        }
        if (sets.length === 0) continue;
        // Sync triggers bump row_version on update: devices pull the re-encrypted row, which reads the same.
        await tx.execute(sql`update ${sql.identifier(t.table)} set ${sql.join(sets, sql`, `)} where ${where}`);
        done += sets.length;
      }
      const last = rows.at(-1);
      return { done, failed, rows: rows.length, last: last ? t.key.map((k) => String(last[k])) : null };
    });
  }

  /** What a value sealed under the current key starts with. */
  const currentPrefix = () => `fc1.${phi.ring().currentKeyId}.`;

  /** Rows of `t` with a value not under the key whose values start with `prefix`. */
  const staleIn = (t: PhiTable, prefix = currentPrefix()): SQL => sql.join(t.columns.map((c) => notCurrent(c, prefix)), sql` or `);

  /**
   * Rows made under an index key other than the current one. A null key id is the first index
   * key of the ring (rows from before index keys were recorded, when the key never changed).
   */
  const underOtherIndexKey = (column: string): SQL => {
    const ring = phi.ring();
    const c = sql.identifier(column);
    return ring.firstIndexKeyId === ring.indexKeyId ? sql`(${c} is not null and ${c} <> ${ring.indexKeyId})` : sql`(${c} is null or ${c} <> ${ring.indexKeyId})`;
  };

  /**
   * One batch of patients whose name-search tokens are under another index key: the names opened
   * and tokenised again under the current one. Locked as `batch` locks, so a concurrent edit waits.
   */
  async function retokeniseBatch(after: string | null, batchSize: number): Promise<BatchDone<string>> {
    return db.transaction(async (tx) => {
      const rows = rowsOf(
        await tx.execute(
          sql`select id, first_name_enc, last_name_enc from patients where ${underOtherIndexKey('name_search_key')} ${after ? sql`and id > ${after}::uuid` : sql``}
              order by id limit ${batchSize} for update`,
        ),
      );
      const failed: FailedValue[] = [];
      let done = 0;
      const ring = phi.ring();
      for (const row of rows) {
        const id = String(row.id);
        let tokens: string[];
        try {
          tokens = ring.nameTokens(phi.open(row.first_name_enc as string, 'patients', 'first_name_enc', id), phi.open(row.last_name_enc as string, 'patients', 'last_name_enc', id));
        } catch {
          // Names no key opens: the row keeps its tokens (and stays counted as stale).
          failed.push({ table: 'patients', column: 'name_search', row_id: id });
          continue;
        }
        await tx.execute(sql`update patients set name_search = ${`{${tokens.join(',')}}`}::text[], name_search_key = ${ring.indexKeyId} where id = ${id}::uuid`);
        done++;
      }
      const last = rows.at(-1);
      return { done, failed, rows: rows.length, last: last ? String(last.id) : null };
    });
  }

  async function reencryptAll(batchSize: number, progress: Progress): Promise<ReencryptResult> {
    const reencrypted: Record<string, number> = {};
    let failed = 0;
    const failedValues: FailedValue[] = [];
    let batches = 0;
    /**
     * One pass of batches, each after the last key the one before read, over what `total`
     * counted; answers what the batches changed. Rows written meanwhile can make the count grow
     * past the estimate.
     */
    const pass = async <K,>(step: string, total: number, run: (after: K | null) => Promise<BatchDone<K>>): Promise<number> => {
      progress({ step, done: 0, total });
      let count = 0;
      let scanned = 0;
      let after: K | null = null;
      for (;;) {
        const b: BatchDone<K> = await run(after);
        batches++;
        count += b.done;
        scanned += b.rows;
        progress({ step, done: scanned, total: Math.max(total, scanned) });
        failed += b.failed.length;
        failedValues.push(...b.failed.slice(0, FAILED_VALUES_LISTED - failedValues.length));
        if (b.rows < batchSize || !b.last) return count;
        after = b.last;
      }
    };
    for (const t of PHI_TABLES) {
      reencrypted[t.table] = await pass(t.table, await countWhere(t.table, staleIn(t)), (after: string[] | null) => batch(t, after, batchSize));
    }
    const total = Object.values(reencrypted).reduce((a, b) => a + b, 0);
    // The blind index: tokens under another index key made again, by the same batches. A row
    // whose names no key opens stays stale and is counted as failed.
    const retokenised = await pass('patients.name_search', await countWhere('patients', underOtherIndexKey('name_search_key')), (after: string | null) =>
      retokeniseBatch(after, batchSize),
    );
    // Geocode cache entries are keyed by a lookup token under the index key that was current
    // when they were written: under another key they cannot be found again, only re-asked.
    const dropped = rowsOf(await db.execute(sql`with d as (delete from geocode_cache where ${underOtherIndexKey('index_key_id')} returning 1) select cast(count(*) as int) as n from d`));
    return {
      key_id: phi.ring().currentKeyId,
      reencrypted,
      total,
      index_key_id: phi.ring().indexKeyId,
      retokenised,
      geocode_cache_dropped: Number(dropped[0]?.n ?? 0),
      failed,
      failed_values: failedValues,
      batches,
    };
  }

  async function countWhere(table: string, where: SQL): Promise<number> {
    const rows = rowsOf(await db.execute(sql`select cast(count(*) as int) as n from ${sql.identifier(table)} where ${where}`));
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * The data dir's key file as it is: never created here (a new ring would not hold the keys
   * the stored values are under). Its absence is an error the operator has to resolve.
   */
  async function keyFileOnDisk(): Promise<PhiKeyFile> {
    const file = await readPhiKeyFile(keyFile);
    if (!file) {
      throw new Conflict(
        `PHI key file ${keyFile} is missing; restore it (or set PHI_KEYS) before running key operations. Nothing was changed.`,
        'phi_key_file_missing',
      );
    }
    return file;
  }

  async function writeKeyFileAtomically(file: PhiKeyFile): Promise<void> {
    await fs.mkdir(path.dirname(keyFile), { recursive: true, mode: 0o700 });
    const tmp = `${keyFile}.${process.pid}.tmp`;
    const handle = await fs.open(tmp, 'w', 0o600);
    try {
      await handle.writeFile(JSON.stringify(file, null, 2));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.chmod(tmp, 0o600);
    await fs.rename(tmp, keyFile);
  }

  let running: Promise<unknown> | null = null;
  /** One rotation or re-encryption at a time in this process. */
  async function exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (running) throw new Conflict('A key rotation is already running', 'rotation_running');
    const p = fn();
    running = p;
    try {
      return await p;
    } finally {
      running = null;
    }
  }

  /*
   * Not `audit.around`: each batch is its own transaction (an outer one would hold every row
   * of the rotation, and PGlite has a single connection), so the outcome is recorded after.
   */
  async function audited(details: Record<string, unknown>, keyId: string, fn: () => Promise<ReencryptResult>): Promise<ReencryptResult> {
    const entry = { action: 'rotate' as const, resourceType: 'phi_keys', resourceId: keyId };
    try {
      const result = await fn();
      const summary = { reencrypted: result.total, retokenised: result.retokenised, geocode_cache_dropped: result.geocode_cache_dropped, failed: result.failed, batches: result.batches };
      await audit.record(db, OPERATOR, { ...entry, details: { ...details, ...summary } }, 'success');
      return result;
    } catch (err) {
      await audit.record(db, OPERATOR, { ...entry, details }, 'error').catch(() => {});
      throw err;
    }
  }

  const batchOf = (n?: number) => Math.max(1, Math.min(n ?? 500, 10_000));

  return {
    /** Key ids and how many stored values each one encrypts. */
    async status(): Promise<KeyStatus> {
      const ring = phi.ring();
      const counts = new Map<string, number>();
      for (const t of PHI_TABLES) {
        for (const column of t.columns) {
          const c = sql.identifier(column);
          const rows = rowsOf(
            await db.execute(
              sql`select split_part(${c}, '.', 2) as kid, cast(count(*) as int) as n from ${sql.identifier(t.table)} where ${c} is not null group by 1`,
            ),
          );
          for (const r of rows) counts.set(String(r.kid), (counts.get(String(r.kid)) ?? 0) + Number(r.n));
        }
      }
      const file = config.phiKeys
        ? parseKeyFile(config.phiKeys, 'PHI_KEYS')
        : await keyFileOnDisk();
      const ringIds = new Set([...(file?.keys.map((k) => k.id) ?? []), ring.currentKeyId]);
      const keys = [...new Set([...ringIds, ...counts.keys()])]
        .sort()
        .map((id) => ({ id, current: id === ring.currentKeyId, in_ring: ringIds.has(id), values: counts.get(id) ?? 0 }));
      return {
        current_key_id: ring.currentKeyId,
        index: {
          key_id: ring.indexKeyId,
          previous_key_ids: (file.previous_index_keys ?? []).map(indexKeyIdOf),
          stale_patients: await countWhere('patients', underOtherIndexKey('name_search_key')),
          stale_geocode_cache: await countWhere('geocode_cache', underOtherIndexKey('index_key_id')),
        },
        key_source: keySource,
        key_file: keySource === 'file' ? keyFile : null,
        keys,
        unknown_key_values: keys.filter((k) => !k.in_ring).reduce((a, k) => a + k.values, 0),
        not_current: keys.filter((k) => !k.current).reduce((a, k) => a + k.values, 0),
      };
    },

    /**
     * Embedded keys (data-dir file): a new current key is written atomically (0600) and
     * installed in this process's ring, then everything is re-encrypted. Keys from PHI_KEYS:
     * nothing changes here; the answer carries the new PHI_KEYS to deploy, after which
     * `reencrypt` finishes the job.
     */
    async rotate(opts: { batchSize?: number; progress?: Progress } = {}): Promise<RotateResult> {
      if (config.phiKeys) {
        const current = parseKeyFile(config.phiKeys, 'PHI_KEYS');
        const next = rotateKeyFile(current);
        await audit.record(db, OPERATOR, { action: 'rotate', resourceType: 'phi_keys', details: { from: current.current, proposed: next.current, applied: false } }, 'success');
        return {
          rotated: false,
          reason: 'keys_from_env',
          new_key_id: next.current,
          phi_keys: JSON.stringify(next),
          next_steps:
            'PHI_KEYS comes from the environment, so nothing was changed. Deploy this value as PHI_KEYS to every server and restart them, then run `fieldchart keys reencrypt` with the same PHI_KEYS. It holds a new blind-index key too; the previous ones stay in previous_index_keys, searched beside it, until `fieldchart keys status` shows no stale patients.',
        };
      }
      return exclusive(async () => {
        const previous = phi.ring().currentKeyId;
        const file = rotateKeyFile(await keyFileOnDisk());
        await writeKeyFileAtomically(file);
        phi.install(file);
        const result = await audited({ from: previous, to: file.current }, file.current, () => reencryptAll(batchOf(opts.batchSize), opts.progress ?? noProgress));
        return { rotated: true as const, previous_key_id: previous, key_file: keyFile, ...result };
      });
    },

    /** Re-encrypts every value not under the current key (after a PHI_KEYS deploy, or to resume). */
    async reencrypt(opts: { batchSize?: number; progress?: Progress } = {}): Promise<ReencryptResult> {
      return exclusive(() => audited({ reencrypt_only: true }, phi.ring().currentKeyId, () => reencryptAll(batchOf(opts.batchSize), opts.progress ?? noProgress)));
    },
  };
}

export type PhiRotation = ReturnType<typeof createPhiRotation>;
