/**
 * The server's rows on the device, written only by the change feed. A feed unit (the batches
 * up to one carrying a checkpoint, or up to `synced`) is staged, then applied together with
 * its cursor in one local transaction: a crash or a dropped socket leaves the previous unit
 * and its cursor, from which the server resumes.
 */
import type { Change } from '@fieldchart/schema/sync';
import type { LocalDb, Queryable } from './local-db.ts';
import { deleteMeta, setMeta } from './meta.ts';
import { openJson, sealJson, toBase64 } from './row-cipher.ts';
import { feedRowAd, stagingAd } from './seal-ad.ts';

/** Tables whose rows belong to one visit (`schedule_uuid`), pruned with it. */
const VISIT_CHILD_TABLES = ['timer_events', 'soap_notes', 'visit_mileage', 'ai_status'];

export async function stageReset(db: Queryable): Promise<void> {
  await db.query(`insert into feed_staging (kind) values ('reset')`);
}

/** Stages a batch as one sealed value (kind `changes`: the batch's array of changes). */
export async function stageChanges(db: Queryable, changes: readonly Change[]): Promise<void> {
  if (changes.length === 0) return;
  const [next] = await db.query<{ seq: number }>(`select nextval('feed_staging_seq_seq')::float8 as seq`);
  const seq = next!.seq;
  await db.query(`insert into feed_staging (seq, kind, sealed) values ($1, 'changes', $2)`, [seq, await sealJson(db.cipher, changes, stagingAd(seq))]);
}

/** Rows of `feed_rows` chosen by `where` (over the clear key columns), opened. */
export async function readFeedRows<T>(db: Queryable, where: string, params: readonly unknown[]): Promise<{ tbl: string; id: string; row: T }[]> {
  const rows = await db.query<{ tbl: string; id: string; sealed: Uint8Array }>(`select tbl, id, sealed from feed_rows where ${where}`, params);
  return Promise.all(rows.map(async (r) => ({ tbl: r.tbl, id: r.id, row: await openJson<T>(db.cipher, r.sealed, feedRowAd(r.tbl, r.id)) })));
}

/** Forgets a half-received unit (the socket dropped): the server resends it from the cursor. */
export async function clearStaging(db: Queryable): Promise<void> {
  await db.query('delete from feed_staging');
}

/**
 * Applies the staged unit plus `changes`, and stores `cursor` (and `syncedAt`, on `synced`),
 * in one local transaction. Answers how many changes were applied.
 */
export async function commitUnit(db: LocalDb, changes: readonly Change[], cursor: string, syncedAt: string | null): Promise<number> {
  return db.transaction(async (tx) => {
    const staged = await tx.query<{ seq: number; kind: 'reset' | 'changes'; sealed: Uint8Array | null }>('select seq::float8 as seq, kind, sealed from feed_staging order by seq');
    let reset = false;
    let unit: Change[] = [];
    for (const s of staged) {
      if (s.kind === 'reset') {
        // A reset mid-unit makes what came before it moot.
        reset = true;
        unit = [];
      } else if (s.sealed) unit.push(...(await openJson<Change[]>(tx.cipher, s.sealed, stagingAd(s.seq))));
    }
    unit.push(...changes);
    if (reset) await tx.query('delete from feed_rows');
    await applyChanges(tx, unit);
    await tx.query('delete from feed_staging');
    await setMeta(tx, 'cursor', cursor);
    if (syncedAt !== null) await setMeta(tx, 'last_synced_at', syncedAt);
    return unit.length;
  });
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

async function applyChanges(tx: Queryable, changes: readonly Change[]): Promise<void> {
  // Each change is a row's whole state: per row, the last one wins.
  const last = new Map<string, Change>();
  for (const c of changes) {
    const key = `${c.table}\u0000${c.id}`;
    last.delete(key); // keep insertion order = order of the last change
    last.set(key, c);
  }
  // Sealed side by side: WebCrypto's work is asynchronous (Node runs it on its thread pool).
  const sealing: Promise<Record<string, unknown>>[] = [];
  const deletes: { tbl: string; id: string }[] = [];
  for (const c of last.values()) {
    if (c.op === 'delete') {
      deletes.push({ tbl: c.table, id: c.id });
      continue;
    }
    const row = c.row;
    sealing.push(
      sealJson(tx.cipher, row, feedRowAd(c.table, c.id)).then((sealed) => ({
        tbl: c.table,
        id: c.id,
        version: c.version,
        sealed: toBase64(sealed),
        schedule_uuid: c.table === 'visits' ? c.id : str(row.schedule_uuid),
        visit_date: c.table === 'visits' ? str(row.visit_date) : null,
        patient_uuid: c.table === 'patients' ? c.id : str(row.patient_uuid),
      })),
    );
  }
  const upserts = await Promise.all(sealing);
  if (deletes.length > 0) {
    await tx.query(
      `delete from feed_rows f using jsonb_to_recordset($1::jsonb) as d(tbl text, id text) where f.tbl = d.tbl and f.id = d.id`,
      [JSON.stringify(deletes)],
    );
  }
  if (upserts.length > 0) {
    await tx.query(
      `insert into feed_rows (tbl, id, version, sealed, schedule_uuid, visit_date, patient_uuid)
       select tbl, id, version, decode(sealed, 'base64'), schedule_uuid, visit_date, patient_uuid
       from jsonb_to_recordset($1::jsonb) as x(tbl text, id text, version bigint, sealed text, schedule_uuid text, visit_date text, patient_uuid text)
       on conflict (tbl, id) do update set version = excluded.version, sealed = excluded.sealed, schedule_uuid = excluded.schedule_uuid,
         visit_date = excluded.visit_date, patient_uuid = excluded.patient_uuid`,
      [JSON.stringify(upserts)],
    );
  }
}

/**
 * Stores the window from `welcome` and drops visits dated outside it with their events,
 * notes, mileage and AI status (the server sends no deletes for those), in one transaction.
 */
export async function applyWindow(db: LocalDb, window: { from: string; to: string }): Promise<number> {
  return db.transaction(async (tx) => {
    await setMeta(tx, 'window', window);
    const gone = await tx.query<{ id: string }>(
      `delete from feed_rows where tbl = 'visits' and (visit_date < $1 or visit_date > $2) returning id`,
      [window.from, window.to],
    );
    if (gone.length > 0) {
      await tx.query(`delete from feed_rows where tbl = any($1::text[]) and schedule_uuid = any($2::text[])`, [
        VISIT_CHILD_TABLES,
        gone.map((g) => g.id),
      ]);
    }
    return gone.length;
  });
}

/** Forgets every synced row and the cursor (sign-out). */
export async function clearFeed(tx: Queryable): Promise<void> {
  await tx.query('delete from feed_rows');
  await tx.query('delete from feed_staging');
  await deleteMeta(tx, 'cursor', 'window', 'last_synced_at');
}
