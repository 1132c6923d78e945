/**
 * Draft SOAP notes as Yjs documents on the sync socket (docs/sync-protocol.md, "Drafts (Yjs)"
 * and "Several nodes"). The hub hands this module the `doc_open` / `doc` / `doc_close`
 * messages of authenticated sockets and every `fieldchart_draft` notification.
 *
 * Invariants:
 * - The in-memory document of a visit holds only what is committed to `draft_updates`: an
 *   update is applied to it after its transaction commits. So the state vector the server
 *   advertises never claims an edit that a crash could lose, and a device re-sends anything
 *   the server does not have. A device's update is relayed to the other local devices on
 *   arrival, ahead of the commit (see `relay`): they hold it either way, and Yjs merges.
 * - A document is in memory only while some local socket has it open; every node can rebuild
 *   it from the table, so nodes keep no state another node depends on.
 * - Operations on one document run one after another (load first), so replies and fan-out
 *   leave in the order the updates were stored; and one socket's open, messages and close of
 *   one document are handled in the order the hub passed them, awaited or not.
 * - Client faults (unknown doc, bad bytes, oversize) become `doc_error` messages; the
 *   returned promises reject only when the database fails.
 */
import * as Y from 'yjs';
import { docName, type ServerMessage } from '@fieldchart/schema/sync';
import type { Db } from '../db/database.ts';
import type { PhiCrypto } from '../security/phi-crypto.ts';
import { safeError } from '../log-safety.ts';
import { addsNothing, parseSyncMessage, step1Message, step2Message, updateMessage, type SyncMessage } from './drafts-messages.ts';
import { COMPACT_ABOVE, createDraftStore, DRAFT_CHANNEL, parseDraftNotice, type DraftSections } from '../services/sync/drafts-store.ts';

export { DRAFT_CHANNEL, COMPACT_ABOVE, type DraftSections } from '../services/sync/drafts-store.ts';

export interface DraftPeer {
  readonly userId: string;
  /**
   * Sends one server message (a `doc` or `doc_error` message) to this socket. May still be
   * called shortly after `detach` (an open that was in flight): a closed socket drops it.
   */
  send(message: ServerMessage): void;
}

export interface Drafts {
  /** doc_open: checks the visit is the peer's own and live (else doc_error not_found), loads the document, subscribes the peer and sends the server's sync step 1. */
  open(peer: DraftPeer, doc: string): Promise<void>;
  /** doc: one y-protocols sync message (base64). Step 1 → step 2; step 2/update → validate, persist with pg_notify, apply, fan out to the other local peers. */
  receive(peer: DraftPeer, doc: string, messageBase64: string): Promise<void>;
  close(peer: DraftPeer, doc: string): void;
  /** The socket went away: drop it from every doc; forget in-memory docs nobody has open. */
  detach(peer: DraftPeer): void;
  /** A `fieldchart_draft` notification (from any node; this node's own are ignored). */
  onNotification(payload: string): Promise<void>;
  /** The draft's section texts from the database, inside the caller's transaction; null if the visit has no draft. */
  sectionsOf(tx: Db, visitId: string, ownerId: string): Promise<DraftSections | null>;
}

export interface DraftsLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

type DocErrorCode = Extract<ServerMessage, { type: 'doc_error' }>['code'];

const ERROR_TEXT: Record<DocErrorCode, string> = {
  not_found: 'Visit not found',
  invalid_update: 'Not a valid Yjs sync message',
  too_large: 'Update too large',
};

/** The origin of updates that came from the table (another node): fanned out to every local peer. */
const FROM_STORE = Symbol('draft-store');

/** The origin of a device's update that was relayed to these peers on arrival, before it was stored. */
class Relayed {
  constructor(readonly peers: ReadonlySet<unknown>) {}
}

interface LiveDoc {
  readonly visitId: string;
  readonly name: string;
  readonly doc: Y.Doc;
  readonly peers: Set<DraftPeer>;
  /** The queue of this document's operations (see the invariants above). */
  tail: Promise<unknown>;
  /** Rows stored for it as far as this node knows: when to try compacting. */
  stored: number;
}

export function createDrafts(deps: { db: Db; phi: PhiCrypto; nodeId: string; log: DraftsLog }): Drafts {
  const { db, log } = deps;
  const store = createDraftStore({ db, phi: deps.phi, nodeId: deps.nodeId, log });
  const live = new Map<string, LiveDoc>();
  const openBy = new Map<DraftPeer, Set<string>>();
  // One lane per socket and document: its open, messages and close are handled in the order
  // the hub passed them, even when it does not wait for one before the next (a device sends
  // its step 1 right behind `doc_open`; that message must not find the doc not yet open).
  const lanes = new Map<DraftPeer, Map<string, Promise<unknown>>>();

  const visitIdOf = (name: string): string | null => (docName.safeParse(name).success ? (name.split('/')[1] ?? null) : null);

  function send(peer: DraftPeer, message: ServerMessage): void {
    try {
      peer.send(message);
    } catch (err) {
      // A socket that fails to send is going away; the hub detaches it.
      log.warn({ err: safeError(err) }, 'draft message not sent');
    }
  }
  const sendDoc = (peer: DraftPeer, doc: string, message: string) => send(peer, { type: 'doc', doc, message });
  const sendError = (peer: DraftPeer, doc: string, code: DocErrorCode) => send(peer, { type: 'doc_error', doc, code, message: ERROR_TEXT[code] });

  function enqueue<T>(d: LiveDoc, fn: () => Promise<T> | T): Promise<T> {
    const result = d.tail.then(fn);
    // A failed operation is reported to its caller; the next one still runs.
    d.tail = result.catch(() => {});
    return result;
  }

  function liveDoc(visitId: string, name: string): LiveDoc {
    const existing = live.get(visitId);
    if (existing) return existing;
    const d: LiveDoc = { visitId, name, doc: new Y.Doc({ gc: true }), peers: new Set(), tail: Promise.resolve(), stored: 0 };
    live.set(visitId, d);
    void enqueue(d, async () => {
      try {
        const updates = await store.load(visitId);
        d.stored = updates.length;
        Y.transact(d.doc, () => {
          for (const u of updates) applySafely(d, u.update, null, u.id);
        });
      } catch (err) {
        // Without its stored updates the document would advertise an empty state: drop it,
        // so the next open loads again; the opens waiting in the queue report the failure.
        log.error({ visit_id: visitId, err: safeError(err) }, 'draft load failed');
        forget(d);
        return;
      }
      // Fan-out starts after the load: loaded content reaches peers through the sync steps.
      d.doc.on('update', (update: Uint8Array, origin: unknown) => {
        const message = updateMessage(update);
        const skip = origin instanceof Relayed ? origin.peers : new Set([origin]);
        for (const p of d.peers) if (!skip.has(p)) sendDoc(p, d.name, message);
      });
    });
    return d;
  }

  function applySafely(d: LiveDoc, update: Uint8Array, origin: unknown, id: number | null): void {
    try {
      Y.applyUpdate(d.doc, update, origin);
    } catch (err) {
      // Validated before it was stored, so this is a Yjs edge case; the row stays for the
      // next load to try again, the document stays usable. No update bytes in the log.
      log.error({ visit_id: d.visitId, update_id: id, err: safeError(err) }, 'draft update not applied');
    }
  }

  function safely<T>(fn: () => T, fallback: T): T {
    try {
      return fn();
    } catch {
      return fallback;
    }
  }

  function forget(d: LiveDoc): void {
    for (const p of d.peers) openBy.get(p)?.delete(d.visitId);
    d.peers.clear();
    if (live.get(d.visitId) === d) live.delete(d.visitId);
    d.doc.destroy();
  }

  function inLane<T>(peer: DraftPeer, visitId: string, fn: () => Promise<T> | T): Promise<T> {
    let mine = lanes.get(peer);
    if (!mine) lanes.set(peer, (mine = new Map()));
    const lane = mine;
    const run = (lane.get(visitId) ?? Promise.resolve()).then(fn);
    const settled = run.then(
      () => {},
      () => {},
    );
    lane.set(visitId, settled);
    void settled.then(() => {
      if (lane.get(visitId) !== settled) return;
      lane.delete(visitId);
      if (lane.size === 0 && lanes.get(peer) === lane) lanes.delete(peer);
    });
    return run;
  }

  function unsubscribe(peer: DraftPeer, visitId: string): void {
    const mine = openBy.get(peer);
    mine?.delete(visitId);
    if (mine?.size === 0) openBy.delete(peer);
    const d = live.get(visitId);
    if (!d) return;
    d.peers.delete(peer);
    if (d.peers.size === 0) forget(d);
  }

  async function openVisit(peer: DraftPeer, visitId: string, name: string): Promise<void> {
    if (!(await store.ownsLiveVisit(db, peer.userId, visitId))) return sendError(peer, name, 'not_found');
    const d = liveDoc(visitId, name);
    d.peers.add(peer);
    let mine = openBy.get(peer);
    if (!mine) openBy.set(peer, (mine = new Set()));
    mine.add(visitId);
    await enqueue(d, () => {
      if (live.get(visitId) !== d) throw new Error('draft document could not be loaded');
      // The device answers with step 2 (what the server lacks); it sends its own step 1 to
      // get what it lacks, as y-protocols providers do on connect.
      if (d.peers.has(peer)) sendDoc(peer, name, step1Message(d.doc));
    });
  }

  /**
   * Relays a device's update to the other devices at once, ahead of storing it: typing
   * reaches them without waiting for a commit (or for the store of the previous keystroke).
   * The server's own copy — its state vector, what step 2 answers, what a note takes — still
   * changes only after the commit, so the server never tells a device an edit is safe before
   * it is; if the store fails, the devices that have the edit send it again on their next sync.
   */
  function relay(d: LiveDoc, peer: DraftPeer, name: string, message: SyncMessage): Relayed | null {
    if (message.kind === 'step1' || !d.peers.has(peer) || safely(() => addsNothing(d.doc, message.update), true)) return null;
    const peers = new Set<unknown>([peer]);
    const text = updateMessage(message.update);
    for (const p of d.peers) {
      if (p === peer) continue;
      sendDoc(p, name, text);
      peers.add(p);
    }
    return new Relayed(peers);
  }

  async function receiveMessage(peer: DraftPeer, visitId: string, name: string, messageBase64: string, early: Relayed | null): Promise<void> {
    const d = live.get(visitId);
    if (!d || !d.peers.has(peer)) return sendError(peer, name, 'not_found');
    const parsed = parseSyncMessage(messageBase64);
    if (!parsed.ok) return sendError(peer, name, parsed.code);
    const message = parsed.message;
    const relayed = early ?? relay(d, peer, name, message);
    await enqueue(d, async () => {
      if (message.kind === 'step1') {
        let reply: string;
        try {
          reply = step2Message(d.doc, message.stateVector);
        } catch {
          return sendError(peer, name, 'invalid_update');
        }
        if (d.peers.has(peer)) sendDoc(peer, name, reply);
        return;
      }
      if (safely(() => addsNothing(d.doc, message.update), false)) return;
      // Stored even if the socket closed the doc meanwhile: it was entitled when it sent it.
      const id = await store.append(visitId, peer.userId, message.update);
      if (id === null) {
        // The visit was deleted (or changed hands) while open.
        unsubscribe(peer, visitId);
        return sendError(peer, name, 'not_found');
      }
      d.stored++;
      applySafely(d, message.update, relayed ?? peer, id);
      // Every local socket left and came back while this was being stored: the new copy
      // may have loaded before the commit, and this node ignores its own notification.
      const current = live.get(visitId);
      if (current && current !== d) void enqueue(current, () => applySafely(current, message.update, FROM_STORE, id));
      await compactIfDue(d);
    });
  }

  async function compactIfDue(d: LiveDoc): Promise<void> {
    if (d.stored <= COMPACT_ABOVE) return;
    try {
      d.stored = await store.compact(d.visitId);
    } catch (err) {
      // The updates are stored either way; wait for another COMPACT_ABOVE before retrying,
      // rather than re-reading hundreds of rows on every keystroke.
      d.stored = 0;
      log.error({ visit_id: d.visitId, err: safeError(err) }, 'draft compaction failed');
    }
  }

  return {
    async open(peer, name) {
      const visitId = visitIdOf(name);
      if (!visitId) return sendError(peer, name, 'not_found');
      await inLane(peer, visitId, () => openVisit(peer, visitId, name));
    },

    async receive(peer, name, messageBase64) {
      const visitId = visitIdOf(name);
      if (!visitId) return sendError(peer, name, 'not_found');
      // A document this socket already has open relays now; one still opening, in its lane.
      const d = live.get(visitId);
      const parsed = d?.peers.has(peer) ? parseSyncMessage(messageBase64) : null;
      const early = d && parsed?.ok ? relay(d, peer, name, parsed.message) : null;
      await inLane(peer, visitId, () => receiveMessage(peer, visitId, name, messageBase64, early));
    },

    close(peer, name) {
      const visitId = visitIdOf(name);
      if (!visitId) return;
      // Now, so nothing more is fanned out to it, and again after an open still in its lane.
      unsubscribe(peer, visitId);
      void inLane(peer, visitId, () => unsubscribe(peer, visitId));
    },

    detach(peer) {
      for (const visitId of new Set([...(openBy.get(peer) ?? []), ...(lanes.get(peer)?.keys() ?? [])])) {
        unsubscribe(peer, visitId);
        void inLane(peer, visitId, () => unsubscribe(peer, visitId));
      }
    },

    async onNotification(payload) {
      const notice = parseDraftNotice(payload);
      if (!notice) return log.warn({ channel: DRAFT_CHANNEL }, 'draft notification not understood');
      if (notice.node === deps.nodeId) return;
      const d = live.get(notice.visit);
      if (!d) return; // nobody here has it open
      await enqueue(d, async () => {
        if (live.get(notice.visit) !== d) return;
        d.stored++;
        const update = await store.loadOne(notice.visit, notice.id);
        if (update) return applySafely(d, update, FROM_STORE, notice.id);
        // Compacted before we read it: its content is in the merged row. Re-applying the
        // whole document is harmless (Yjs ignores what it has) and fans out only the news.
        const all = await store.load(notice.visit);
        d.stored = all.length;
        Y.transact(d.doc, () => {
          for (const u of all) applySafely(d, u.update, FROM_STORE, u.id);
        }, FROM_STORE);
      });
    },

    sectionsOf: (tx, visitId, ownerId) => store.sectionsOf(tx, visitId, ownerId),
  };
}
