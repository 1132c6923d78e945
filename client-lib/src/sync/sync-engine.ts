/**
 * The sync state machine: connect → `hello` → `welcome` (reconcile the outbox, prune to the
 * window) → upload the outbox in order and pull the change feed → stay subscribed. Every
 * incoming message is handled one after another (each may write the device database), and
 * every background failure becomes status, never an unhandled rejection.
 */
import {
  CLOSE_CODES,
  PROTOCOL_VERSION,
  closeCodeName,
  type ClientMessage,
  type MutationName,
  type ServerMessage,
} from '@fieldchart/schema/sync';
import { FieldchartApiError, newIdempotencyKey, type RestClient } from '../rest/index.ts';
import type { WebSocketConstructor } from '../platform/websocket.ts';
import type { LocalDb } from '../storage/local-db.ts';
import { clientIdOf, deleteMeta, getMeta, setMeta, type StoredSession } from '../storage/meta.ts';
import { clearDrafts, unconfirmedDrafts } from '../storage/draft-store.ts';
import { applyWindow, clearFeed, clearStaging, commitUnit, stageChanges, stageReset } from '../storage/feed-store.ts';
import {
  ackEntry,
  clearOutbox,
  pendingCount,
  pendingEntries,
  reconcileOnWelcome,
  recordAttempt,
  rejectEntry,
  parkEntry,
  failureCount,
  type Failure,
  settleAcked,
  type Rejection,
} from '../storage/outbox.ts';
import { Backoff, type BackoffOptions } from './backoff.ts';
import { Connection } from './connection.ts';
import { DraftSync, draftName } from './drafts.ts';
import { Emitter } from './emitter.ts';
import { INITIAL_STATUS, type SyncError, type SyncStatus } from './status.ts';

/** Mutations sent and not yet answered, at most (the protocol's limit per socket). */
export const MAX_IN_FLIGHT = 100;
/**
 * Socket opens that failed in a row (no `welcome`) before the outbox is drained over HTTP
 * instead (`POST /sync/mutations`): a network that passes HTTP but not websockets.
 */
export const HTTP_FALLBACK_AFTER = 2;
/** Bytes of mutations per `POST /sync/mutations` (the route takes up to MAX_MUTATION_BYTES + 1 MiB). */
const HTTP_BATCH_BYTES = 1024 * 1024;

export interface SyncEvents extends Record<string, unknown> {
  status: SyncStatus;
  /** Local data changed (feed unit applied, write acknowledged or rolled back): re-read. */
  change: { readonly reason: 'feed' | 'ack' | 'reject' | 'write' | 'reset' };
  rejection: Rejection;
  /** The server parked a write after repeated unexpected errors: kept, out of the queue. */
  failure: Failure;
  /** The server acknowledged a mutation. */
  ack: { readonly mutationId: number; readonly name: string; readonly scheduleUuid: string | null; readonly result: unknown };
}

export interface SyncEngineOptions {
  readonly db: LocalDb;
  readonly rest: RestClient;
  readonly url: string;
  readonly WebSocket: WebSocketConstructor;
  readonly backoff?: BackoffOptions;
  /** How long before the access token expires to refresh it (ms); default: a fifth of its life, 5 s to 60 s. */
  readonly refreshLeadMs?: number;
  readonly submitWaitMs?: number;
}

export class SyncEngine {
  readonly events = new Emitter<SyncEvents>();
  readonly drafts: DraftSync;
  private statusValue: SyncStatus = INITIAL_STATUS;
  private session: StoredSession | null = null;
  private conn: Connection | null = null;
  private welcomed = false;
  private running = false;
  private closed = false;
  /** Incoming messages and closes, handled strictly in order. */
  private queue: Promise<void> = Promise.resolve();
  private readonly inflight = new Set<number>();
  private lastSentId = 0;
  private pumping = false;
  private pumpAgain = false;
  private uploadPausedUntil = 0;
  private uploadTimer: ReturnType<typeof setTimeout> | null = null;
  private reconnectTimer: ReturnType<typeof setTimeout> | null = null;
  private refreshTimer: ReturnType<typeof setTimeout> | null = null;
  private refreshing: Promise<void> | null = null;
  private readonly reconnectBackoff: Backoff;
  private readonly uploadBackoff: Backoff;
  private readonly refreshBackoff: Backoff;
  private syncedCount = 0;
  /** `syncedCount` when this socket was welcomed. */
  private syncedAtWelcome = 0;
  private forceRefresh = false;
  private connecting = false;
  private failedOpens = 0;
  private httpUploading = false;
  private waiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];

  constructor(private readonly opts: SyncEngineOptions) {
    this.reconnectBackoff = new Backoff(opts.backoff);
    this.uploadBackoff = new Backoff(opts.backoff);
    this.refreshBackoff = new Backoff({ initialMs: 1000, maxMs: 60_000 });
    this.drafts = new DraftSync({
      db: opts.db,
      send: (m) => this.send(m),
      onConfirmed: () => void this.pump(),
      onError: (code, message) => this.fail(code, message),
      submitWaitMs: opts.submitWaitMs ?? 15_000,
    });
  }

  get status(): SyncStatus {
    return this.statusValue;
  }

  get currentSession(): StoredSession | null {
    return this.session;
  }

  /** Loads the stored state and, with a session, starts syncing. */
  async start(): Promise<void> {
    this.session = await getMeta(this.opts.db, 'session');
    await clientIdOf(this.opts.db);
    this.setStatus({
      signedIn: this.session !== null,
      pending: await pendingCount(this.opts.db),
      failed: await failureCount(this.opts.db),
      lastSyncedAt: await getMeta(this.opts.db, 'last_synced_at'),
      halted: this.session ? null : 'signed_out',
    });
    if (this.session) this.run();
  }

  /** A new session (sign-in): stored, then syncing starts over with it. */
  async useSession(session: StoredSession): Promise<void> {
    await setMeta(this.opts.db, 'session', session);
    this.session = session;
    this.setStatus({ signedIn: true, halted: null, lastError: null });
    this.disconnect();
    this.run();
  }

  /** Stops syncing and forgets the session (the caller clears data as it decides). */
  async endSession(halted: string): Promise<void> {
    this.running = false;
    this.disconnect();
    this.session = null;
    await this.opts.db.query(`delete from meta where key = 'session'`);
    this.setStatus({ signedIn: false, halted, connected: false, current: false });
    this.rejectWaiters(new Error(`sync stopped: ${halted}`));
  }

  /** A local write was made: show it and upload it. */
  async written(): Promise<void> {
    this.setStatus({ pending: await pendingCount(this.opts.db), failed: await failureCount(this.opts.db) });
    this.events.emit('change', { reason: 'write' });
    void this.pump();
    void this.uploadOverHttp();
  }

  /** Resolves when the outbox is empty and the device is current (see SyncClient.whenSynced). */
  whenSynced(): Promise<void> {
    if (this.isSynced()) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.running = false;
    this.disconnect();
    await this.queue.catch(() => {});
    await this.drafts.flush();
    this.drafts.destroy();
    this.rejectWaiters(new Error('the client was closed'));
    this.setStatus({ halted: 'closed' });
    this.events.clear();
  }

  /** Drops the socket now (tests, or an app going to the background); reconnects with backoff. */
  dropConnection(): void {
    this.conn?.close(CLOSE_CODES.client_reconnect, 'client reconnect');
  }

  // ——— connection ———

  private run(): void {
    if (this.closed) return;
    this.running = true;
    void this.connect();
  }

  private async connect(): Promise<void> {
    if (!this.running || this.conn || this.closed || this.connecting) return;
    this.connecting = true;
    try {
      await this.openSocket();
    } finally {
      this.connecting = false;
    }
  }

  private async openSocket(): Promise<void> {
    this.clearTimer('reconnectTimer');
    const session = this.session;
    if (!session) return;
    if (this.forceRefresh || session.expires_at - Date.now() < 5_000) {
      try {
        await this.refresh();
      } catch {
        if (this.running) this.scheduleReconnect();
        return;
      }
    }
    if (!this.running || this.conn || !this.session) return;
    const clientId = await clientIdOf(this.opts.db);
    const cursor = await getMeta(this.opts.db, 'cursor');
    const token = this.session.token;
    if (!this.running || this.conn) return;
    const conn: Connection = new Connection(this.opts.WebSocket, this.opts.url, {
      onOpen: () => {
        conn.send({ type: 'hello', protocol: PROTOCOL_VERSION, token, client_id: clientId, cursor });
      },
      onMessage: (m) => this.enqueue(() => this.handle(conn, m)),
      onInvalid: (reason) => {
        this.fail('bad_message', reason);
        // Resume from the last stored checkpoint rather than act on a frame we cannot read.
        conn.close(CLOSE_CODES.bad_message, 'bad message');
      },
      onClose: (code, reason) => this.enqueue(() => this.handleClose(conn, code, reason)),
    });
    this.conn = conn;
  }

  /** Closes the socket from this side, now; nothing reconnects unless `run` says so. */
  private disconnect(): void {
    const conn = this.conn;
    this.conn = null;
    conn?.close(CLOSE_CODES.normal, 'bye');
    this.afterClose();
    this.clearTimer('reconnectTimer');
  }

  /** What every end of a socket resets, whoever ended it. */
  private afterClose(): void {
    this.welcomed = false;
    this.inflight.clear();
    this.lastSentId = 0;
    this.drafts.onDisconnected();
    this.clearTimer('refreshTimer');
    this.clearTimer('uploadTimer');
    // A half-received unit is resent from the stored cursor on the next socket.
    this.enqueue(() => clearStaging(this.opts.db));
    this.setStatus({ connected: false, uploading: false, downloading: false, current: false });
  }

  private scheduleReconnect(atLeastMs = 0): void {
    if (!this.running || this.closed) return;
    this.clearTimer('reconnectTimer');
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      void this.connect();
    }, this.reconnectBackoff.next(atLeastMs));
  }

  private enqueue(fn: () => Promise<void>): void {
    this.queue = this.queue.then(fn).catch((err: unknown) => {
      this.fail('internal', err instanceof Error ? err.message : String(err));
      // A failure half way through a message leaves the socket's state unknown: start over.
      this.conn?.close(CLOSE_CODES.client_reconnect, 'client error');
    });
  }

  private send(m: ClientMessage): boolean {
    return this.welcomed && this.conn !== null ? this.conn.send(m) : false;
  }

  private async handleClose(conn: Connection, code: number, reason: string): Promise<void> {
    if (this.conn !== conn) return;
    this.conn = null;
    const wasWelcomed = this.welcomed;
    this.afterClose();
    if (!this.running) return;
    const name = closeCodeName(code);
    switch (code) {
      case CLOSE_CODES.unauthorized:
        // The token was refused: a fresh one, then a fresh socket.
        this.fail('unauthorized', reason || 'the server refused the access token');
        this.forceRefresh = true;
        this.scheduleReconnect();
        return;
      case CLOSE_CODES.account_disabled:
        this.fail('account_disabled', reason || 'the account is disabled');
        await this.endSession('account_disabled');
        return;
      case CLOSE_CODES.superseded:
      case CLOSE_CODES.protocol_unsupported:
        this.fail(name ?? String(code), reason || `closed with ${code}`);
        this.running = false;
        this.setStatus({ halted: name });
        this.rejectWaiters(new Error(`sync stopped: ${name}`));
        return;
      default:
        if (code !== CLOSE_CODES.normal || wasWelcomed) {
          this.fail(name ?? (code === 1006 ? 'network' : `closed_${code}`), reason || (code === 1006 ? 'connection lost' : `closed with ${code}`));
        }
        if (!wasWelcomed) this.failedOpens++;
        this.scheduleReconnect();
        void this.uploadOverHttp();
    }
  }

  // ——— messages ———

  private async handle(conn: Connection, m: ServerMessage): Promise<void> {
    if (this.conn !== conn) return;
    const db = this.opts.db;
    switch (m.type) {
      case 'welcome': {
        const known = await getMeta(db, 'user_id');
        if (known !== null && known !== m.user_id) {
          // The device holds another clinician's data. Their unsynced writes must never be
          // uploaded as this user (a session started from tokens names no user until now):
          // stop, and say so; signing that clinician in again uploads them.
          const pending = await pendingCount(db);
          const drafts = (await unconfirmedDrafts(db)).length;
          if (pending > 0 || drafts > 0) {
            this.fail('other_user_outbox', `${pending} write(s) and ${drafts} draft(s) of another user are on this device: sign that user in to upload them, or sign out with force`);
            this.running = false;
            this.disconnect();
            this.setStatus({ halted: 'other_user_outbox' });
            this.rejectWaiters(new Error('sync stopped: another user’s writes are on this device'));
            return;
          }
          // Nothing of theirs is unsynced: their rows go, the feed starts over for this user.
          await db.transaction(async (tx) => {
            await clearFeed(tx);
            await clearOutbox(tx);
            await clearDrafts(tx);
            await setMeta(tx, 'user_id', m.user_id);
          });
          this.events.emit('change', { reason: 'reset' });
          conn.close(CLOSE_CODES.client_reconnect, 'user changed');
          return;
        }
        if (known === null) await setMeta(db, 'user_id', m.user_id);
        if (this.session && this.session.user_id === null) {
          // A session started from tokens learns its user here (the HTTP fallback needs it).
          this.session = { ...this.session, user_id: m.user_id };
          await setMeta(db, 'session', this.session);
        }
        await applyWindow(db, m.window);
        await reconcileOnWelcome(db, m.last_mutation_id, this.syncedCount);
        this.syncedAtWelcome = this.syncedCount;
        await clearStaging(db);
        this.welcomed = true;
        this.failedOpens = 0;
        this.reconnectBackoff.reset();
        this.forceRefresh = false;
        this.inflight.clear();
        this.lastSentId = 0;
        this.uploadPausedUntil = 0;
        this.scheduleRefresh(m.token_expires_at);
        this.setStatus({ connected: true, halted: null, pending: await pendingCount(db), downloading: true, current: false });
        this.events.emit('change', { reason: 'feed' });
        void this.pump();
        void this.drafts.onConnected().catch((err: unknown) => this.fail('draft', String(err)));
        return;
      }
      case 'auth_ok':
        this.scheduleRefresh(m.token_expires_at);
        return;
      case 'reset':
        await stageReset(db);
        this.setStatus({ downloading: true, current: false });
        return;
      case 'changes':
        this.setStatus({ downloading: true, current: false });
        if (m.checkpoint === null) await stageChanges(db, m.changes);
        else {
          await commitUnit(db, m.changes, m.checkpoint, null);
          this.events.emit('change', { reason: 'feed' });
        }
        return;
      case 'synced': {
        await commitUnit(db, [], m.cursor, m.server_time);
        this.syncedCount++;
        const settled = await settleAcked(db, this.syncedCount);
        this.setStatus({ downloading: false, current: true, lastSyncedAt: m.server_time, pending: await pendingCount(db) });
        this.events.emit('change', { reason: settled > 0 ? 'ack' : 'feed' });
        this.drafts.retryUnavailable();
        this.resolveWaiters();
        return;
      }
      case 'ack': {
        this.inflight.delete(m.mutation_id);
        // An entry shows optimistically until a feed run that began after its commit has been
        // applied: the second `synced` from now for a fresh ack (one may already be under way),
        // the first one of this socket for a duplicate (committed before this socket's hello) —
        // which may already have come, so it settles at once.
        const duplicate = (m.result as { duplicate?: unknown } | null)?.duplicate === true;
        const entry = await ackEntry(db, m.mutation_id, m.result, duplicate ? this.syncedAtWelcome + 1 : this.syncedCount + 2, new Date().toISOString());
        if (duplicate) await settleAcked(db, this.syncedCount);
        this.uploadBackoff.reset();
        this.setStatus({ pending: await pendingCount(db), uploading: this.inflight.size > 0 });
        if (entry) {
          this.events.emit('ack', { mutationId: entry.mutation_id, name: entry.name, scheduleUuid: entry.schedule_uuid, result: m.result });
          this.events.emit('change', { reason: 'ack' });
          if (entry.name === 'visit.schedule' || entry.name === 'patient.create') this.drafts.retryUnavailable();
        }
        void this.pump();
        this.resolveWaiters();
        return;
      }
      case 'reject': {
        this.inflight.delete(m.mutation_id);
        const rejection = await rejectEntry(db, m, new Date().toISOString());
        this.setStatus({ pending: await pendingCount(db), uploading: this.inflight.size > 0 });
        if (rejection) {
          this.fail('rejected', `${rejection.name} (mutation ${rejection.mutationId}): ${rejection.code}`);
          this.events.emit('rejection', rejection);
          this.events.emit('change', { reason: 'reject' });
        }
        void this.pump();
        this.resolveWaiters();
        return;
      }
      case 'failed': {
        this.inflight.delete(m.mutation_id);
        const failure = await parkEntry(db, m, new Date().toISOString());
        this.setStatus({ pending: await pendingCount(db), failed: await failureCount(db), uploading: this.inflight.size > 0 });
        if (failure) {
          this.fail('failed', `${failure.name} (mutation ${failure.mutationId}): ${failure.code}`);
          this.events.emit('failure', failure);
          this.events.emit('change', { reason: 'reject' });
        }
        void this.pump();
        this.resolveWaiters();
        return;
      }
      case 'retry': {
        if (!this.inflight.has(m.mutation_id)) return;
        await recordAttempt(db, m.mutation_id, `retry after ${m.after_ms} ms`);
        // Not processed: it and everything sent after it go again, in order, after a pause.
        for (const id of [...this.inflight]) if (id >= m.mutation_id) this.inflight.delete(id);
        this.lastSentId = Math.min(this.lastSentId, m.mutation_id - 1);
        const delay = this.uploadBackoff.next(m.after_ms);
        this.uploadPausedUntil = Date.now() + delay;
        this.fail('retry', `the server asked to retry mutation ${m.mutation_id}`);
        this.clearTimer('uploadTimer');
        this.uploadTimer = setTimeout(() => {
          this.uploadTimer = null;
          // Timers may fire a little before Date.now() says the pause is over.
          this.uploadPausedUntil = 0;
          void this.pump();
        }, delay);
        return;
      }
      case 'doc':
        await this.drafts.handleDoc(m.doc, m.message);
        return;
      case 'doc_error':
        this.drafts.handleDocError(m.doc, m.code, m.message);
        return;
    }
  }

  // ——— uploading ———

  /** Sends pending entries in order, up to MAX_IN_FLIGHT unanswered. One runner at a time. */
  async pump(): Promise<void> {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        await this.pumpOnce();
      } while (this.pumpAgain);
    } catch (err) {
      this.fail('upload', err instanceof Error ? err.message : String(err));
    } finally {
      this.pumping = false;
    }
  }

  private async pumpOnce(): Promise<void> {
    const conn = this.conn;
    if (!this.welcomed || !conn || Date.now() < this.uploadPausedUntil) return;
    const room = MAX_IN_FLIGHT - this.inflight.size;
    if (room <= 0) return;
    const entries = await pendingEntries(this.opts.db, this.lastSentId, room);
    for (const e of entries) {
      if (this.conn !== conn || !this.welcomed) return;
      let args = e.args;
      if (e.name === 'note.submit' && typeof e.args.schedule_uuid === 'string') {
        // The server takes the sections from its copy of the draft: it must have ours first.
        const ready = await this.drafts.prepareForSubmit(e.args.schedule_uuid);
        if (ready.kind === 'wait') break;
        if (ready.kind === 'sections') args = { ...ready.sections, ...e.args };
        if (this.conn !== conn || !this.welcomed) return;
      }
      const sent = conn.send({ type: 'mutation', mutation_id: e.mutation_id, name: e.name, args, client_time: e.client_time });
      if (!sent) return;
      this.inflight.add(e.mutation_id);
      this.lastSentId = e.mutation_id;
    }
    this.setStatus({ uploading: this.inflight.size > 0 });
  }

  /**
   * The outbox over HTTP while the socket cannot be opened: the same mutations, answered the
   * same way, on the server's same exactly-once counter (so the socket, once back, sees them
   * as duplicates). A retry answer, or a note waiting for its draft, ends the round; the next
   * failed open or local write starts another.
   */
  private async uploadOverHttp(): Promise<void> {
    if (this.httpUploading || this.failedOpens < HTTP_FALLBACK_AFTER || this.welcomed || !this.running || !this.session) return;
    this.httpUploading = true;
    const db = this.opts.db;
    try {
      // Only the outbox of the session's own user: without a socket nothing else checks it.
      const owner = await getMeta(db, 'user_id');
      if (owner === null || this.session.user_id !== owner) return;
      const clientId = await clientIdOf(db);
      for (;;) {
        if (this.welcomed || !this.running || !this.session) return;
        const mutations: { mutation_id: number; name: MutationName; args: Record<string, unknown>; client_time: string }[] = [];
        let bytes = 0;
        for (const e of await pendingEntries(db, 0, MAX_IN_FLIGHT)) {
          let args = e.args;
          if (e.name === 'note.submit' && typeof e.args.schedule_uuid === 'string') {
            const ready = await this.drafts.prepareForSubmit(e.args.schedule_uuid);
            if (ready.kind === 'wait') break;
            if (ready.kind === 'sections') args = { ...ready.sections, ...e.args };
          }
          // One request stays under the route's body limit: a batch is cut before it would pass it.
          bytes += new TextEncoder().encode(JSON.stringify(args)).length + 200;
          if (mutations.length > 0 && bytes > HTTP_BATCH_BYTES) break;
          mutations.push({ mutation_id: e.mutation_id, name: e.name as MutationName, args, client_time: e.client_time });
        }
        if (mutations.length === 0) return;
        this.setStatus({ uploading: true });
        const { results } = await this.opts.rest.sync.applyMutations({ client_id: clientId, mutations });
        let retry = false;
        for (const r of results) {
          if (r.type === 'ack') {
            const entry = await ackEntry(db, r.mutation_id, r.result, this.syncedCount + 2, new Date().toISOString());
            if (entry) this.events.emit('ack', { mutationId: entry.mutation_id, name: entry.name, scheduleUuid: entry.schedule_uuid, result: r.result });
          } else if (r.type === 'reject') {
            const rejection = await rejectEntry(db, r, new Date().toISOString());
            if (rejection) {
              this.fail('rejected', `${rejection.name} (mutation ${rejection.mutationId}): ${rejection.code}`);
              this.events.emit('rejection', rejection);
            }
          } else if (r.type === 'failed') {
            const failure = await parkEntry(db, r, new Date().toISOString());
            if (failure) {
              this.fail('failed', `${failure.name} (mutation ${failure.mutationId}): ${failure.code}`);
              this.events.emit('failure', failure);
            }
          } else {
            await recordAttempt(db, r.mutation_id, `retry after ${r.after_ms} ms`);
            retry = true;
            break;
          }
        }
        this.setStatus({ pending: await pendingCount(db), failed: await failureCount(db), uploading: false });
        this.events.emit('change', { reason: 'ack' });
        this.resolveWaiters();
        if (retry) return;
      }
    } catch (err) {
      this.fail('upload', err instanceof Error ? err.message : String(err));
    } finally {
      this.httpUploading = false;
      this.setStatus({ uploading: this.inflight.size > 0 });
    }
  }

  // ——— tokens ———

  private scheduleRefresh(expiresAtIso: string): void {
    this.clearTimer('refreshTimer');
    const expiresAt = Date.parse(expiresAtIso);
    const life = expiresAt - Date.now();
    const lead = this.opts.refreshLeadMs ?? Math.min(60_000, Math.max(5_000, life / 5));
    this.refreshTimer = setTimeout(() => {
      this.refreshTimer = null;
      void this.refreshInBand();
    }, Math.max(0, life - lead));
  }

  /** A new token pair over REST, then `auth` on the open socket, without reconnecting. */
  private async refreshInBand(): Promise<void> {
    try {
      await this.refresh();
      this.refreshBackoff.reset();
      const token = this.session?.token;
      if (token) this.send({ type: 'auth', token });
    } catch {
      if (!this.running || !this.session) return;
      // Offline or the server is down: try again; at expiry the server closes with 4401.
      this.refreshTimer = setTimeout(() => {
        this.refreshTimer = null;
        void this.refreshInBand();
      }, this.refreshBackoff.next());
    }
  }

  /** Refreshes the stored session (one refresh at a time). A refused refresh token ends the session. */
  refresh(): Promise<void> {
    this.refreshing ??= (async () => {
      const session = this.session;
      if (!session) throw new Error('not signed in');
      try {
        const stored = await getMeta(this.opts.db, 'refresh_attempt');
        const attempt = stored?.refresh_token === session.refresh_token ? stored : { refresh_token: session.refresh_token, key: newIdempotencyKey() };
        if (attempt !== stored) await setMeta(this.opts.db, 'refresh_attempt', attempt);
        const pair = await this.opts.rest.refresh({ refresh_token: session.refresh_token }, { idempotencyKey: attempt.key });
        const next: StoredSession = { ...session, token: pair.token, refresh_token: pair.refresh_token, expires_at: Date.now() + pair.expires_in * 1000 };
        if (this.session !== session) return; // signed out or in again meanwhile
        await this.opts.db.transaction(async (tx) => {
          await setMeta(tx, 'session', next);
          await deleteMeta(tx, 'refresh_attempt');
        });
        this.session = next;
        this.forceRefresh = false;
      } catch (err) {
        // 409: the same refresh is still being answered (idempotency): not the end of the session.
        if (err instanceof FieldchartApiError && err.status >= 400 && err.status < 500 && err.status !== 429 && err.status !== 409) {
          this.fail('unauthorized', `the session is over (${err.code}): sign in again`);
          await this.endSession('unauthorized');
        } else {
          this.fail('refresh_failed', err instanceof Error ? err.message : String(err));
        }
        throw err;
      }
    })().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  // ——— status ———

  private isSynced(): boolean {
    const s = this.statusValue;
    return s.pending === 0 && s.current && s.connected;
  }

  private resolveWaiters(): void {
    if (!this.isSynced()) return;
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w.resolve();
  }

  private rejectWaiters(err: Error): void {
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w.reject(err);
  }

  private fail(code: string, message: string): void {
    const error: SyncError = { code, message, at: new Date().toISOString() };
    this.setStatus({ lastError: error });
  }

  private setStatus(patch: Partial<SyncStatus>): void {
    const next = { ...this.statusValue, ...patch };
    const changed = (Object.keys(next) as (keyof SyncStatus)[]).some((k) => next[k] !== this.statusValue[k]);
    if (!changed) return;
    this.statusValue = Object.freeze(next);
    this.events.emit('status', this.statusValue);
  }

  private clearTimer(name: 'reconnectTimer' | 'refreshTimer' | 'uploadTimer'): void {
    const t = this[name];
    if (t) clearTimeout(t);
    this[name] = null;
  }
}
