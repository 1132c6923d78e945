/**
 * SOAP drafts on the device: each Y.Doc's updates, appended as they happen, merged into one
 * when they pile up. `local_seq` counts the device's own edits; `confirmed_seq` is the last of
 * them the server is known to hold (drafts.ts decides when), so a draft with
 * `local_seq > confirmed_seq` still has edits that exist only here.
 */
import * as Y from 'yjs';
import type { LocalDb, Queryable } from './local-db.ts';
import { draftUpdateAd } from './seal-ad.ts';

/** Stored updates of one document beyond which loading merges them. */
const COMPACT_AT = 100;

export async function loadDraftUpdates(db: LocalDb, doc: string): Promise<Uint8Array[]> {
  const rows = await db.query<{ id: number; sealed: Uint8Array }>('select id::float8 as id, sealed from draft_updates where doc = $1 order by id', [doc]);
  const updates = await Promise.all(rows.map((r) => db.cipher.open(r.sealed, draftUpdateAd(doc, r.id))));
  if (updates.length > COMPACT_AT) {
    const merged = Y.mergeUpdates(updates);
    await db.transaction(async (tx) => {
      await tx.query('delete from draft_updates where doc = $1', [doc]);
      await insertUpdate(tx, doc, merged);
    });
    return [merged];
  }
  return updates;
}

/** An update sealed to its draft and its place in the draft's order. */
async function insertUpdate(tx: Queryable, doc: string, update: Uint8Array): Promise<void> {
  const [next] = await tx.query<{ id: number }>(`select nextval('draft_updates_id_seq')::float8 as id`);
  const id = next!.id;
  await tx.query('insert into draft_updates (id, doc, sealed) values ($1, $2, $3)', [id, doc, await tx.cipher.seal(update, draftUpdateAd(doc, id))]);
}

/**
 * Stores an update that holds `localEdits` of the device's own edits (merged updates hold
 * several), which `local_seq` counts. Answers the draft's `local_seq`.
 */
export async function appendDraftUpdate(db: LocalDb, doc: string, update: Uint8Array, localEdits: number): Promise<number> {
  // Stored twice (the shared database's leading tab closed during it), an update merges as once
  // and `local_seq` only runs ahead of what the server is later asked to confirm.
  return db.transaction(
    async (tx) => {
      await insertUpdate(tx, doc, update);
      const [row] = await tx.query<{ local_seq: number }>(
        `insert into drafts (doc, local_seq) values ($1, $2) on conflict (doc) do update set local_seq = drafts.local_seq + $2 returning local_seq`,
        [doc, localEdits],
      );
      return row?.local_seq ?? 0;
    },
    { repeatable: true },
  );
}

export async function draftSeqs(db: Queryable, doc: string): Promise<{ local_seq: number; confirmed_seq: number }> {
  const [row] = await db.query<{ local_seq: number; confirmed_seq: number }>('select local_seq, confirmed_seq from drafts where doc = $1', [doc]);
  return row ?? { local_seq: 0, confirmed_seq: 0 };
}

/** The server holds the draft's edits up to `seq`. */
export async function confirmDraft(db: Queryable, doc: string, seq: number): Promise<void> {
  await db.query('update drafts set confirmed_seq = greatest(confirmed_seq, $2) where doc = $1', [doc, seq]);
}

/** Drafts with edits the server is not known to have. */
export async function unconfirmedDrafts(db: Queryable): Promise<string[]> {
  const rows = await db.query<{ doc: string }>('select doc from drafts where local_seq > confirmed_seq order by doc');
  return rows.map((r) => r.doc);
}

export async function hasDraft(db: Queryable, doc: string): Promise<boolean> {
  const rows = await db.query('select 1 from draft_updates where doc = $1 limit 1', [doc]);
  return rows.length > 0;
}

export async function clearDrafts(tx: Queryable): Promise<void> {
  await tx.query('delete from draft_updates');
  await tx.query('delete from drafts');
}
