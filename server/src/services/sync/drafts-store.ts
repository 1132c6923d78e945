/**
 * Where draft SOAP notes live between sockets and across nodes: the Yjs updates of each
 * visit's draft, appended to `draft_updates` as they arrive, sealed with the PHI key ring
 * (bound to the row id), and merged into one row when a document has more than
 * COMPACT_ABOVE of them. A document's state is all of its stored updates applied together;
 * Yjs makes the order irrelevant and a repeated update harmless.
 *
 * The only module that reads or writes `draft_updates`: the note service discards a visit's
 * draft through `discardDraft` when the note supersedes it.
 */
import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import * as Y from 'yjs';
import { draftUpdates } from '@fieldchart/schema/db';
import type { SoapSection } from '@fieldchart/schema/rules';
import { rowsOf, type Db } from '../../db/database.ts';
import { NotFound } from '../../errors.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import { findOwnedVisit } from '../visits/visit-records.ts';
import { SYNC_CHANNELS } from './channels.ts';

/** The notification channel every node listens on (docs/sync-protocol.md, Several nodes). */
export const DRAFT_CHANNEL = SYNC_CHANNELS.draft;
/** More stored updates than this and the document is merged into one row. */
export const COMPACT_ABOVE = 200;
export type DraftSections = Record<SoapSection, string>;

// The first key of the two-key advisory lock: a namespace, so the visit's hash cannot collide
// with another feature's single-key locks. Any constant works if every node uses the same one.
const COMPACTION_LOCK_CLASS = 7_414_301;

const TABLE = 'draft_updates';
const COLUMN = 'update_enc';

/**
 * What a node announces after storing an update. Ids only: the update itself stays sealed in
 * the table, so nothing clinical crosses the notification channel or lands in a log.
 */
export interface DraftNotice {
  readonly node: string;
  readonly id: number;
  readonly visit: string;
}

export function parseDraftNotice(payload: string): DraftNotice | null {
  try {
    const v = JSON.parse(payload) as Partial<DraftNotice> | null;
    if (typeof v?.node !== 'string' || typeof v.visit !== 'string' || !Number.isSafeInteger(v.id)) return null;
    return { node: v.node, id: v.id as number, visit: v.visit };
  } catch {
    return null;
  }
}

export interface StoredUpdate {
  readonly id: number;
  readonly update: Uint8Array;
}

export interface DraftStoreLog {
  warn(obj: object, msg: string): void;
}

export type DraftStore = ReturnType<typeof createDraftStore>;

export function createDraftStore(deps: { db: Db; phi: PhiCrypto; nodeId: string; log: DraftStoreLog }) {
  const { db, phi, nodeId, log } = deps;

  const seal = (id: number, update: Uint8Array) => phi.seal(Buffer.from(update).toString('base64'), TABLE, COLUMN, String(id)) as string;
  const unseal = (id: number, stored: string): Uint8Array =>
    Buffer.from(phi.open(stored, TABLE, COLUMN, String(id)) ?? '', 'base64');

  async function nextId(tx: Db): Promise<number> {
    // The id is taken before the insert because the ciphertext is bound to it.
    const [row] = rowsOf<{ id: string | number }>(
      await tx.execute(sql`select nextval(pg_get_serial_sequence(${TABLE}, 'id')) as id`),
    );
    return Number(row?.id);
  }

  async function rowsOfVisit(tx: Db, visitId: string, ownerId?: string) {
    return tx
      .select({ id: draftUpdates.id, ownerId: draftUpdates.ownerId, updateEnc: draftUpdates.updateEnc })
      .from(draftUpdates)
      .where(ownerId === undefined ? eq(draftUpdates.visitId, visitId) : and(eq(draftUpdates.visitId, visitId), eq(draftUpdates.ownerId, ownerId)))
      .orderBy(asc(draftUpdates.id));
  }

  /** Whether `visitId` is a live visit of `ownerId`; a foreign and a missing visit look the same. */
  async function ownsLiveVisit(tx: Db, ownerId: string, visitId: string): Promise<boolean> {
    try {
      await findOwnedVisit(tx, ownerId, visitId);
      return true;
    } catch (err) {
      if (err instanceof NotFound) return false;
      throw err;
    }
  }

  return {
    ownsLiveVisit,

    /**
     * Stores one update and announces it, in one transaction: other nodes are told only
     * about what is committed. Null when the visit is no longer the owner's live visit.
     */
    async append(visitId: string, ownerId: string, update: Uint8Array): Promise<number | null> {
      return db.transaction(async (tx) => {
        if (!(await ownsLiveVisit(tx, ownerId, visitId))) return null;
        const id = await nextId(tx);
        await tx.insert(draftUpdates).values({ id, visitId, ownerId, updateEnc: seal(id, update) });
        const notice: DraftNotice = { node: nodeId, id, visit: visitId };
        await tx.execute(sql`select pg_notify(${DRAFT_CHANNEL}, ${JSON.stringify(notice)})`);
        return id;
      });
    },

    /**
     * Every stored update of a live document. A row that does not open (a key missing from
     * the ring) is skipped and named by id: the rest of the draft stays usable, and the
     * device re-sends what the server's state vector lacks on its next sync.
     */
    async load(visitId: string): Promise<StoredUpdate[]> {
      const out: StoredUpdate[] = [];
      for (const row of await rowsOfVisit(db, visitId)) {
        try {
          out.push({ id: row.id, update: unseal(row.id, row.updateEnc) });
        } catch (err) {
          log.warn({ visit_id: visitId, update_id: row.id, err_type: (err as Error)?.name }, 'draft update does not open; skipped');
        }
      }
      return out;
    },

    /** One stored update of `visitId`; null when it is gone (compacted into another row). */
    async loadOne(visitId: string, id: number): Promise<Uint8Array | null> {
      const [row] = await db
        .select({ id: draftUpdates.id, updateEnc: draftUpdates.updateEnc })
        .from(draftUpdates)
        .where(and(eq(draftUpdates.id, id), eq(draftUpdates.visitId, visitId)));
      return row ? unseal(row.id, row.updateEnc) : null;
    },

    /**
     * The section texts of the owner's draft, inside the caller's transaction; null when there
     * is none. Strict, unlike `load`: a note submitted from a draft with a missing piece would
     * silently lose clinical text, so an update that does not open is an error.
     */
    async sectionsOf(tx: Db, visitId: string, ownerId: string): Promise<DraftSections | null> {
      const rows = await rowsOfVisit(tx, visitId, ownerId);
      if (rows.length === 0) return null;
      const doc = new Y.Doc();
      try {
        Y.transact(doc, () => {
          for (const row of rows) Y.applyUpdate(doc, unseal(row.id, row.updateEnc));
        });
        return sectionsOfDoc(doc);
      } finally {
        doc.destroy();
      }
    },

    /**
     * Merges the document's stored updates into one row per owner when there are more than
     * COMPACT_ABOVE. The advisory lock makes concurrent compactions of one visit (on any
     * node) take turns; appends do not wait for it, and rows appended meanwhile are left
     * alone because only the rows read are deleted. Answers the rows left.
     */
    async compact(visitId: string): Promise<number> {
      return db.transaction(async (tx) => {
        await tx.execute(sql`select pg_advisory_xact_lock(${COMPACTION_LOCK_CLASS}::int, hashtext(${visitId}))`);
        const rows = await rowsOfVisit(tx, visitId);
        if (rows.length <= COMPACT_ABOVE) return rows.length;
        const byOwner = new Map<string, Array<(typeof rows)[number]>>();
        for (const row of rows) {
          const group = byOwner.get(row.ownerId);
          if (group) group.push(row);
          else byOwner.set(row.ownerId, [row]);
        }
        let left = 0;
        for (const [ownerId, group] of byOwner) {
          // Every row must open: a row that does not would be deleted without being merged.
          const merged = Y.mergeUpdates(group.map((r) => unseal(r.id, r.updateEnc)));
          const id = await nextId(tx);
          await tx.insert(draftUpdates).values({ id, visitId, ownerId, updateEnc: seal(id, merged) });
          await tx.delete(draftUpdates).where(inArray(draftUpdates.id, group.map((r) => r.id)));
          left++;
        }
        return left;
      });
    },
  };
}

/**
 * Deletes a visit's draft inside the caller's transaction: the submitted note supersedes it,
 * and PHI is not kept twice (or longer than it is needed).
 */
export async function discardDraft(tx: Db, visitId: string): Promise<void> {
  await tx.delete(draftUpdates).where(eq(draftUpdates.visitId, visitId));
}

export function sectionsOfDoc(doc: Y.Doc): DraftSections {
  const text = (name: SoapSection) => doc.getText(name).toString();
  return { subjective: text('subjective'), objective: text('objective'), assessment: text('assessment'), plan: text('plan') };
}
