/**
 * SOAP drafts: one Y.Doc per visit (`visit/<uuid>/soap`), stored on the device as it is
 * edited and kept in step with the server over the socket with y-protocols' sync messages.
 *
 * The server does not acknowledge draft updates, yet `note.submit` must only be sent once the
 * server holds the draft (it takes the sections from its copy), and sync receipts must say
 * whether edits exist only on the device. Confirmation therefore comes from the server's own
 * answers: its step 1 carries its state vector (covering ours: it has everything), and its
 * step 2 answers our step 1 — sent after our updates on the same socket, the answer proves
 * those were received ("ping"). Confirmed edits are counted in `drafts.confirmed_seq`.
 */
import * as Y from 'yjs';
import * as syncProtocol from 'y-protocols/sync';
import * as encoding from 'lib0/encoding';
import * as decoding from 'lib0/decoding';
import { fromBase64, toBase64 } from 'lib0/buffer';
import { SOAP_SECTIONS, type SoapSection } from '@fieldchart/schema/rules';
import type { ClientMessage } from '@fieldchart/schema/sync';
import type { LocalDb } from '../storage/local-db.ts';
import { appendDraftUpdate, confirmDraft, draftSeqs, hasDraft, loadDraftUpdates, unconfirmedDrafts } from '../storage/draft-store.ts';
import { failureCode } from '../storage/storage-errors.ts';

/** The sections of a SOAP draft, each a `Y.Text` of that name. */
export { SOAP_SECTIONS, type SoapSection };

/** Transaction origins: what the server sent, and what was read back from the device. */
const REMOTE = Symbol('fieldchart-remote');
const LOADED = Symbol('fieldchart-loaded');
/** An update another tab of the app made or received, and stored in the shared database. */
const TAB = Symbol('fieldchart-tab');

export const draftName = (scheduleUuid: string) => `visit/${scheduleUuid}/soap`;
const scheduleOf = (doc: string) => doc.slice('visit/'.length, -'/soap'.length);

interface DraftEntry {
  readonly name: string;
  readonly doc: Y.Doc;
  /** The app holds the document (between `open` and `close`). */
  appOpen: boolean;
  /** Device edits persisted so far (mirrors `drafts.local_seq`). */
  localSeq: number;
  confirmedSeq: number;
  /** Persisting runs one write after another, in order. */
  persist: Promise<void>;
  /**
   * Updates made while a write is under way, stored together by the next one. One transaction
   * per keystroke cost ~0.1 s in a browser (PGlite copies changed files to IndexedDB), so fast
   * typing built a queue seconds long that existed only in memory: a reload lost its tail.
   */
  queued: { update: Uint8Array; local: boolean }[];
  // Per connection:
  serverOpen: boolean;
  /** The server answered `doc_error` (e.g. a visit created offline it has not applied yet). */
  unavailable: boolean;
  step1Sent: number;
  step2Received: number;
  pings: { index: number; seq: number }[];
  pingTimer: ReturnType<typeof setTimeout> | null;
}

export interface DraftSyncDeps {
  readonly db: LocalDb;
  /** Sends over the current socket if the server said `welcome`; false otherwise. */
  send(message: ClientMessage): boolean;
  /** A draft's edits were confirmed: a waiting `note.submit` may go. */
  onConfirmed(doc: string): void;
  onError(code: string, message: string): void;
  /** Longest a `note.submit` waits for the server to confirm its draft before it carries the sections itself. */
  readonly submitWaitMs: number;
  /** Tabs sharing the database: an update this tab stored, for the other tabs' open copies. */
  readonly relay?: (doc: string, update: Uint8Array) => void;
}

export type SubmitReadiness = { readonly kind: 'ready' } | { readonly kind: 'wait' } | { readonly kind: 'sections'; readonly sections: Partial<Record<SoapSection, string>> };

export class DraftSync {
  private readonly entries = new Map<string, DraftEntry>();
  private readonly loading = new Map<string, Promise<DraftEntry>>();
  private connected = false;
  private readonly waitingSince = new Map<string, number>();
  private readonly waitTimers = new Set<ReturnType<typeof setTimeout>>();
  private destroyed = false;

  constructor(private readonly deps: DraftSyncDeps) {}

  /** The visit's draft, loaded from the device and synced while online. Same Y.Doc until closed. */
  async open(scheduleUuid: string): Promise<Y.Doc> {
    const entry = await this.load(draftName(scheduleUuid));
    entry.appOpen = true;
    if (this.connected && !entry.serverOpen) this.openOnServer(entry);
    return entry.doc;
  }

  /**
   * The app is done with the draft. Edits the server has not confirmed keep syncing in the
   * background; then the server stops sending this draft here.
   */
  async close(scheduleUuid: string): Promise<void> {
    const entry = this.entries.get(draftName(scheduleUuid));
    if (!entry) return;
    entry.appOpen = false;
    await entry.persist;
    this.releaseIfDone(entry);
  }

  /** The section texts from the device's copy (null if the visit has no draft here). */
  async sections(scheduleUuid: string): Promise<Record<SoapSection, string> | null> {
    const name = draftName(scheduleUuid);
    const live = this.entries.get(name);
    if (live) return textsOf(live.doc);
    if (!(await hasDraft(this.deps.db, name))) return null;
    const doc = new Y.Doc();
    for (const u of await loadDraftUpdates(this.deps.db, name)) Y.applyUpdate(doc, u);
    const texts = textsOf(doc);
    doc.destroy();
    return texts;
  }

  /** The socket is up: open every draft the app holds and every one with unconfirmed edits. */
  async onConnected(): Promise<void> {
    this.connected = true;
    const names = new Set([...this.entries.keys(), ...(await unconfirmedDrafts(this.deps.db))]);
    for (const name of names) {
      if (!this.connected) return;
      const entry = await this.load(name);
      if (this.connected && !entry.serverOpen) this.openOnServer(entry);
    }
  }

  onDisconnected(): void {
    this.connected = false;
    for (const entry of this.entries.values()) this.resetConnectionState(entry);
  }

  /** Something changed on the server (an ack, a feed unit): drafts it refused may exist now. */
  retryUnavailable(): void {
    if (!this.connected) return;
    for (const entry of this.entries.values()) {
      if (entry.unavailable) {
        entry.unavailable = false;
        this.openOnServer(entry);
      }
    }
  }

  /**
   * Another tab stored an update of `name` (tab-link.ts): this tab's copy takes it. The leading
   * tab (connected) loads the draft if it must and sends the update on to the server.
   */
  async fromTab(name: string, update: Uint8Array): Promise<void> {
    const entry = this.entries.get(name) ?? (this.connected ? await this.load(name) : null);
    if (!entry) return; // not open here: the shared database has it for when it is
    Y.applyUpdate(entry.doc, update, TAB);
    if (this.connected && !entry.serverOpen && !entry.unavailable) this.openOnServer(entry);
  }

  /** A `doc` message from the server. */
  async handleDoc(name: string, base64: string): Promise<void> {
    const entry = this.entries.get(name);
    if (!entry || !entry.serverOpen) return; // closed meanwhile: the server stops soon
    let bytes: Uint8Array;
    try {
      bytes = fromBase64(base64);
    } catch {
      return this.deps.onError('bad_message', `draft ${name}: message is not base64`);
    }
    try {
      const peek = decoding.createDecoder(bytes);
      const type = decoding.readVarUint(peek);
      let covered = false;
      if (type === syncProtocol.messageYjsSyncStep1) {
        covered = svCovers(Y.decodeStateVector(decoding.readVarUint8Array(peek)), Y.encodeStateVector(entry.doc));
      }
      const reply = encoding.createEncoder();
      syncProtocol.readSyncMessage(decoding.createDecoder(bytes), reply, entry.doc, REMOTE);
      if (encoding.length(reply) > 0) this.sendSync(entry, encoding.toUint8Array(reply));
      if (type === syncProtocol.messageYjsSyncStep1) {
        await entry.persist;
        if (covered) await this.confirm(entry, entry.localSeq);
        else this.ping(entry);
      } else if (type === syncProtocol.messageYjsSyncStep2) {
        entry.step2Received++;
        const done = entry.pings.filter((p) => p.index <= entry.step2Received);
        entry.pings = entry.pings.filter((p) => p.index > entry.step2Received);
        for (const p of done) await this.confirm(entry, p.seq);
      }
    } catch (err) {
      this.deps.onError('bad_message', `draft ${name}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  handleDocError(name: string, code: string, message: string): void {
    const entry = this.entries.get(name);
    if (entry) {
      entry.serverOpen = false;
      entry.unavailable = true;
      entry.pings = [];
    }
    this.deps.onError(`draft_${code}`, `${name}: ${message}`);
  }

  /**
   * Before a `note.submit` for the visit goes out: ready when the server holds the draft's
   * edits (or there is no draft here); otherwise wait, and after `submitWaitMs` carry the
   * device's section texts in the mutation rather than block the outbox behind it.
   */
  async prepareForSubmit(scheduleUuid: string): Promise<SubmitReadiness> {
    const name = draftName(scheduleUuid);
    const seqs = await draftSeqs(this.deps.db, name);
    if (seqs.local_seq <= seqs.confirmed_seq) {
      this.waitingSince.delete(name);
      return { kind: 'ready' };
    }
    const since = this.waitingSince.get(name) ?? Date.now();
    this.waitingSince.set(name, since);
    const left = since + this.deps.submitWaitMs - Date.now();
    if (left <= 0) {
      const texts: Partial<Record<SoapSection, string>> = (await this.sections(scheduleUuid)) ?? {};
      const sections: Partial<Record<SoapSection, string>> = {};
      // An empty section is left out: the server then keeps its own copy's text.
      for (const [k, v] of Object.entries(texts)) if (v && v.trim() !== '') sections[k as SoapSection] = v;
      return { kind: 'sections', sections };
    }
    const entry = await this.load(name);
    if (this.connected && !entry.serverOpen && !entry.unavailable) this.openOnServer(entry);
    const timer = setTimeout(() => {
      this.waitTimers.delete(timer);
      if (!this.destroyed) this.deps.onConfirmed(name);
    }, left + 5);
    this.waitTimers.add(timer);
    return { kind: 'wait' };
  }

  /** Forgets every draft in memory (sign-out); the device copies are cleared by the caller. */
  clear(): void {
    for (const entry of this.entries.values()) {
      if (entry.serverOpen) this.deps.send({ type: 'doc_close', doc: entry.name });
      if (entry.pingTimer) clearTimeout(entry.pingTimer);
      entry.doc.destroy();
    }
    this.entries.clear();
    this.waitingSince.clear();
  }

  destroy(): void {
    this.destroyed = true;
    this.connected = false;
    for (const t of this.waitTimers) clearTimeout(t);
    for (const entry of this.entries.values()) {
      if (entry.pingTimer) clearTimeout(entry.pingTimer);
      entry.doc.destroy();
    }
    this.entries.clear();
  }

  /** Waits for every stored update (tests, close). */
  async flush(): Promise<void> {
    await Promise.all([...this.entries.values()].map((e) => e.persist));
  }

  private async load(name: string): Promise<DraftEntry> {
    const existing = this.entries.get(name);
    if (existing) return existing;
    let loading = this.loading.get(name);
    if (!loading) {
      loading = this.loadFresh(name).finally(() => this.loading.delete(name));
      this.loading.set(name, loading);
    }
    return loading;
  }

  private async loadFresh(name: string): Promise<DraftEntry> {
    const doc = new Y.Doc();
    const updates = await loadDraftUpdates(this.deps.db, name);
    const seqs = await draftSeqs(this.deps.db, name);
    doc.transact(() => {
      for (const u of updates) Y.applyUpdate(doc, u, LOADED);
    }, LOADED);
    // Make the sections exist, so an app can bind editors before any text arrives.
    for (const s of SOAP_SECTIONS) doc.getText(s);
    const entry: DraftEntry = {
      name,
      doc,
      appOpen: false,
      localSeq: seqs.local_seq,
      confirmedSeq: seqs.confirmed_seq,
      persist: Promise.resolve(),
      queued: [],
      serverOpen: false,
      unavailable: false,
      step1Sent: 0,
      step2Received: 0,
      pings: [],
      pingTimer: null,
    };
    doc.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin === LOADED) return;
      if (origin === TAB) {
        // Stored (and its edit counted) by the tab that made it; the server may still need it.
        entry.persist = entry.persist
          .then(async () => {
            entry.localSeq = Math.max(entry.localSeq, (await draftSeqs(this.deps.db, name)).local_seq);
          })
          .catch((err: unknown) => this.deps.onError(failureCode(err, 'storage'), `draft ${name}: ${err instanceof Error ? err.message : String(err)}`));
        if (!entry.serverOpen) return;
        const enc = encoding.createEncoder();
        syncProtocol.writeUpdate(enc, update);
        this.sendSync(entry, encoding.toUint8Array(enc));
        this.schedulePing(entry);
        return;
      }
      const local = origin !== REMOTE;
      this.store(entry, update, local);
      if (local && entry.serverOpen) {
        const enc = encoding.createEncoder();
        syncProtocol.writeUpdate(enc, update);
        this.sendSync(entry, encoding.toUint8Array(enc));
        this.schedulePing(entry);
      }
    });
    this.entries.set(name, entry);
    return entry;
  }

  /**
   * Stores an update after the writes before it. Updates that arrive while a write is under way
   * wait together and go in one transaction, merged: at most one write runs and one waits.
   */
  private store(entry: DraftEntry, update: Uint8Array, local: boolean): void {
    entry.queued.push({ update, local });
    if (entry.queued.length > 1) return; // the waiting write takes this one too
    entry.persist = entry.persist
      .then(async () => {
        const batch = entry.queued.splice(0);
        const merged = batch.length === 1 ? batch[0]!.update : Y.mergeUpdates(batch.map((b) => b.update));
        const localEdits = batch.filter((b) => b.local).length;
        const seq = await appendDraftUpdate(this.deps.db, entry.name, merged, localEdits);
        if (localEdits > 0) entry.localSeq = seq;
        // Stored first: a tab that loads the draft from the database then has it too.
        this.deps.relay?.(entry.name, merged);
      })
      .catch((err: unknown) => this.deps.onError(failureCode(err, 'storage'), `draft ${entry.name}: ${err instanceof Error ? err.message : String(err)}`));
  }

  private openOnServer(entry: DraftEntry): void {
    this.resetConnectionState(entry);
    if (!this.deps.send({ type: 'doc_open', doc: entry.name })) return;
    entry.serverOpen = true;
    this.sendStep1(entry);
    if (entry.localSeq > entry.confirmedSeq) {
      // Our edits go now, whether or not the server sends its step 1 (which would let us
      // send only the difference); then a ping proves they arrived.
      const enc = encoding.createEncoder();
      syncProtocol.writeUpdate(enc, Y.encodeStateAsUpdate(entry.doc));
      this.sendSync(entry, encoding.toUint8Array(enc));
      this.ping(entry);
    }
  }

  private resetConnectionState(entry: DraftEntry): void {
    entry.serverOpen = false;
    entry.step1Sent = 0;
    entry.step2Received = 0;
    entry.pings = [];
    if (entry.pingTimer) clearTimeout(entry.pingTimer);
    entry.pingTimer = null;
  }

  private sendSync(entry: DraftEntry, bytes: Uint8Array): void {
    this.deps.send({ type: 'doc', doc: entry.name, message: toBase64(bytes) });
  }

  private sendStep1(entry: DraftEntry): number {
    const enc = encoding.createEncoder();
    syncProtocol.writeSyncStep1(enc, entry.doc);
    this.sendSync(entry, encoding.toUint8Array(enc));
    return ++entry.step1Sent;
  }

  /** Asks the server for its step 2; its answer proves it received what we sent before. */
  private ping(entry: DraftEntry): void {
    if (!entry.serverOpen || entry.localSeq <= entry.confirmedSeq) return;
    const seq = entry.localSeq;
    entry.pings.push({ index: this.sendStep1(entry), seq });
  }

  private schedulePing(entry: DraftEntry): void {
    if (entry.pingTimer) clearTimeout(entry.pingTimer);
    // Typing sends an update per keystroke; one ping once the burst is over is enough.
    entry.pingTimer = setTimeout(() => {
      entry.pingTimer = null;
      void entry.persist.then(() => this.ping(entry));
    }, 250);
  }

  private async confirm(entry: DraftEntry, seq: number): Promise<void> {
    if (seq <= entry.confirmedSeq) return;
    entry.confirmedSeq = seq;
    await confirmDraft(this.deps.db, entry.name, seq);
    this.waitingSince.delete(entry.name);
    this.deps.onConfirmed(entry.name);
    this.releaseIfDone(entry);
  }

  /** A draft loaded only to upload it is let go once the server has it. */
  private releaseIfDone(entry: DraftEntry): void {
    if (entry.appOpen || entry.localSeq > entry.confirmedSeq) return;
    if (entry.serverOpen) this.deps.send({ type: 'doc_close', doc: entry.name });
    if (entry.pingTimer) clearTimeout(entry.pingTimer);
    entry.doc.destroy();
    this.entries.delete(entry.name);
  }
}

function textsOf(doc: Y.Doc): Record<SoapSection, string> {
  return Object.fromEntries(SOAP_SECTIONS.map((s) => [s, doc.getText(s).toString()])) as Record<SoapSection, string>;
}

/** Whether state vector `server` has every update `local` has. */
function svCovers(server: Map<number, number>, localEncoded: Uint8Array): boolean {
  for (const [client, clock] of Y.decodeStateVector(localEncoded)) if ((server.get(client) ?? 0) < clock) return false;
  return true;
}

export { scheduleOf as scheduleUuidOfDraft };
