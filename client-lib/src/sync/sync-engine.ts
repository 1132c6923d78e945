/**
 * The sync state machine: connect → `hello` → `welcome` (whose data, reconcile the outbox,
 * prune to the window) → the uploader drains the outbox while the change feed is applied →
 * stay subscribed; on a close, reconnect with backoff (or stop, as the close code says).
 * The engine decides only what happens next and whom to tell; the rest is its collaborators'
 * (made and tied together in engine-parts.ts): credentials the session's (session.ts), which
 * socket says hello sockets.ts's, answers to mutations the uploader's (uploader.ts), frames
 * other than `welcome` frames.ts's routes, what a close means after-close.ts's, when to
 * try again reconnect.ts's, the HTTP carrier http-fallback.ts's, whose data device-data.ts's,
 * `whenSynced` waiters.ts's, drafts DraftSync's, the other tabs TabSync's. Incoming messages
 * are handled one after another (each may write the device database), and every background
 * failure becomes status, never an unhandled rejection.
 */
import { CLOSE_CODES, type ServerMessage } from '@fieldchart/schema/sync';
import { failureCode } from '../storage/storage-errors.ts';
import type { RestClient } from '../rest/index.ts';
import { clientIdOf, type StoredSession } from '../storage/meta.ts';
import { pendingCount } from '../storage/outbox.ts';
import { stepAfterClose, type EndStep } from './after-close.ts';
import { socketCarrier } from './carriers.ts';
import type { Connection } from './connection.ts';
import { storedStatus } from './device-data.ts';
import { engineParts, type EngineParts, type SyncEngineOptions } from './engine-parts.ts';
import type { SyncStatus } from './status.ts';
import type { Carrier } from './uploader.ts';

export type { SyncEvents } from './events.ts';

/** A tab that began to lead and could not read the shared database yet tries again after this. */
const LEAD_RETRY_MS = 100;

export class SyncEngine {
  readonly events: EngineParts['events'];
  readonly state: EngineParts['state'];
  readonly session: EngineParts['session'];
  readonly drafts: EngineParts['drafts'];
  readonly written: EngineParts['written'];
  readonly whenSynced: EngineParts['whenSynced'];
  readonly dropConnection: EngineParts['dropConnection'];
  /**
   * Removes the user's data from the device — synced rows, the outbox and drafts, unsynced
   * work included — and replaces the device key; the app hears a reset. Sign-out, another
   * user signing in, and an account closed on the server all end here.
   */
  readonly wipeUserData: () => Promise<void>;
  private readonly parts: EngineParts;
  /** The socket's carrier once the server said `welcome` (null before, and for HTTP). */
  private welcomed: Carrier | null = null;
  private running = false;
  private closed = false;
  /** The last socket was taken over by another install with this client id (4409). */
  private superseded = false;
  /** Incoming messages and closes, handled strictly in order. */
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly opts: SyncEngineOptions) {
    this.parts = engineParts(opts, {
      connect: () => void this.connect(),
      cameOnline: () => this.cameOnline(),
      syncing: () => this.syncing,
      scheduleReconnect: () => this.scheduleReconnect(),
      carrier: () => this.welcomed,
      message: (conn, m) => this.enqueue(() => this.handle(conn, m)),
      closed: (conn, code, reason) => this.enqueue(() => this.handleClose(conn, code, reason)),
      endSession: (reason) => this.endSession(reason),
      refused: (end) => this.enqueue(() => this.endAndWipe(end)),
      inOrder: (fn) => {
        this.queue = this.queue.then(fn).catch((err: unknown) => this.state.failWith(err, 'internal'));
      },
      reloadSession: () => this.reloadSession(),
    });
    ({ events: this.events, state: this.state, session: this.session, drafts: this.drafts, written: this.written, whenSynced: this.whenSynced, dropConnection: this.dropConnection } = this.parts);
    this.wipeUserData = () => this.parts.device.wipe();
  }

  /** Syncing runs and the client is open. */
  private get syncing(): boolean {
    return this.running && !this.closed;
  }

  get rest(): RestClient {
    return this.session.rest;
  }

  get status(): SyncStatus {
    return this.state.value;
  }

  /** Loads the stored state and, with a session, starts syncing. */
  async start(): Promise<void> {
    await clientIdOf(this.opts.db);
    const session = await this.restore();
    if (this.parts.tabs && !(await this.parts.tabs.lead(() => this.enqueue(() => this.becomeLeader())))) return;
    if (session) this.run();
  }

  /** A new session (sign-in): stored, then syncing starts over with it. */
  async useSession(session: StoredSession): Promise<void> {
    await this.session.begin(session);
    this.restart();
    this.parts.tabs?.tellLeader({ type: 'session' });
  }

  /** Stops syncing and forgets the session (the caller clears data as it decides). */
  async endSession(halted: string): Promise<void> {
    this.halt(halted);
    await this.session.forget();
    this.state.patch({ signedIn: false });
    this.parts.tabs?.tellLeader({ type: 'session' });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.parts.unwatchNetwork();
    this.halt('closed', new Error('the client was closed'));
    this.parts.tabs?.close(new Error('the client was closed'));
    await this.queue.catch(() => {});
    await this.drafts.flush();
    this.drafts.destroy();
    this.events.clear();
  }

  /** The network is back: connect now, not when the backoff would have tried next. */
  private cameOnline(): void {
    if (!this.syncing) return;
    this.parts.reconnect.resetDelay();
    if (this.parts.sockets.busy) return;
    this.parts.reconnect.cancel();
    void this.connect();
  }

  // ——— connection ———

  /** Reads the stored session and what the device holds into the status (start, a new leader). */
  private async restore(patch: Partial<SyncStatus> = {}): Promise<StoredSession | null> {
    const session = await this.session.load();
    this.state.patch({ ...patch, ...(await storedStatus(this.opts.db, session)) });
    return session;
  }

  /** A session is stored (here or by another tab): syncing starts over with it. */
  private restart(): void {
    this.state.patch({ signedIn: true, halted: null, lastError: null });
    this.disconnect();
    this.run();
  }

  private run(): void {
    if (this.closed) return;
    this.running = true;
    void this.connect();
  }

  /** Stops syncing: no socket, no reconnect, waiters told why. */
  private halt(reason: string, err = new Error(`sync stopped: ${reason}`)): void {
    this.running = false;
    this.disconnect();
    this.parts.uploader.detach();
    this.state.patch({ halted: reason, connected: false, current: false });
    this.parts.waiters.rejectAll(err);
  }

  private async connect(): Promise<void> {
    if (this.parts.leading() && this.syncing) await this.parts.sockets.connect();
  }

  /** Closes the socket from this side, now; nothing reconnects unless `run` says so. */
  private disconnect(): void {
    this.parts.sockets.forget();
    this.afterClose();
    this.parts.reconnect.cancel();
  }

  /** What every end of a socket resets, whoever ended it. */
  private afterClose(): void {
    if (this.welcomed) this.parts.uploader.detach(this.welcomed);
    this.welcomed = null;
    this.drafts.onDisconnected();
    this.session.stopKeepingFresh();
    this.enqueue(() => this.parts.feed.disconnected());
    this.state.patch({ connected: false, uploading: false, downloading: false, current: false });
  }

  private scheduleReconnect(atLeastMs = 0): void {
    if (!this.syncing) return;
    this.parts.reconnect.schedule(atLeastMs);
  }

  private enqueue(fn: () => Promise<void>): void {
    this.queue = this.queue.then(fn).catch((err: unknown) => {
      this.state.failWith(err, 'internal');
      // A failure half way through a message leaves the socket's state unknown: start over.
      this.parts.sockets.close(CLOSE_CODES.client_reconnect, 'client error');
    });
  }

  private async handleClose(conn: Connection, code: number, reason: string): Promise<void> {
    if (!this.parts.sockets.ended(conn)) return;
    const wasWelcomed = this.welcomed !== null;
    this.afterClose();
    const step = stepAfterClose(code, reason, { welcomed: wasWelcomed, offline: this.parts.network?.online === false, said: this.parts.sockets.protocol });
    // A spare still opening takes the place of a socket that failed; on any other step it goes too.
    const handedOver = this.parts.sockets.handOver(this.running && step.next === 'retry');
    if (!this.running) return;
    if (step.next === 'end') return this.endAndWipe(step);
    if (step.error) this.state.fail(step.error.code, step.error.message);
    switch (step.next) {
      case 'refresh':
        this.session.markRefused();
        return this.scheduleReconnect();
      case 'wipe':
        await this.parts.device.wipeInBackground();
        return this.scheduleReconnect();
      case 'superseded':
        this.superseded = true;
        return this.scheduleReconnect(step.pauseMs);
      case 'step_down':
        this.parts.sockets.protocol = step.protocol;
        return this.scheduleReconnect();
      case 'halt':
        return this.halt(step.reason);
      case 'retry':
        this.parts.reconnect.count(step.attempt);
        if (handedOver) return;
        this.scheduleReconnect();
        await this.parts.fallback.takeUpIfWanted();
    }
  }

  /**
   * The server ended this device's right to the data (the account disabled, 4403; the device
   * revoked, 4411 or 403 `device_revoked` over HTTP): syncing stops — nothing more is
   * uploaded — the session is forgotten and the device wiped.
   */
  private async endAndWipe(step: EndStep): Promise<void> {
    if (!this.running) return;
    this.state.fail(step.error.code, step.error.message);
    await this.endSession(step.reason);
    await this.parts.device.wipeInBackground();
  }

  // ——— tabs ———

  /**
   * This tab now holds the lock (the app's first tab, or the leader closed): everything is in
   * the shared database — the session another tab may have stored, the outbox with writes any
   * tab queued — so syncing starts from there, and what this tab waited for is now its own.
   */
  private async becomeLeader(): Promise<void> {
    if (this.closed || !this.parts.tabs) return;
    this.parts.waiters.adopt(this.parts.tabs.takeWaiters());
    let session: StoredSession | null;
    try {
      session = await this.restore({ connected: false, uploading: false, downloading: false, current: false });
    } catch (err) {
      // The leading tab's worker held the database too: a query sent as it closed fails while
      // this tab's worker opens it. Queries after that wait for it: try again shortly.
      this.state.failWith(err, 'internal');
      setTimeout(() => this.enqueue(() => this.becomeLeader()), LEAD_RETRY_MS);
      return;
    }
    this.parts.tabs.announce();
    if (session) this.run();
  }

  /** A follower signed in or out: the stored session is the truth. */
  private async reloadSession(): Promise<void> {
    const session = await this.session.load();
    if (!session) {
      this.halt('signed_out');
      this.drafts.clear();
      this.state.patch(await storedStatus(this.opts.db, null));
      return;
    }
    this.restart();
  }

  // ——— messages ———

  private async handle(conn: Connection, m: ServerMessage): Promise<void> {
    if (this.parts.sockets.current !== conn) return;
    if (m.type !== 'welcome') return this.parts.route(m);
    // Re-keyed (over HTTP) while this socket was opening: it speaks for the old id.
    if (this.parts.sockets.helloClientId !== (await clientIdOf(this.opts.db))) return conn.close(CLOSE_CODES.client_reconnect, 'new client id');
    return this.welcome(conn, m);
  }

  private async welcome(conn: Connection, m: Extract<ServerMessage, { type: 'welcome' }>): Promise<void> {
    const db = this.opts.db;
    const claim = await this.parts.device.claim(m.user_id);
    // Another clinician's unsynced work is here: it is never uploaded as this user.
    if (claim === 'blocked') return this.halt('other_user_outbox', new Error('sync stopped: another user’s writes are on this device'));
    if (claim === 'restart') return conn.close(CLOSE_CODES.client_reconnect, 'user changed');
    // The HTTP fallback needs the session's user.
    await this.session.adoptUser(m.user_id);
    await this.parts.feed.welcomed(m);
    conn.welcomed();
    this.parts.reconnect.welcomed();
    this.parts.keepTokenFresh(m.token_expires_at);
    this.state.patch({ connected: true, halted: null, pending: await pendingCount(db), downloading: true, current: false });
    this.events.emit('change', { reason: 'feed' });
    const carrier = socketCarrier(conn, (duplicate) => this.parts.feed.settleAfter(duplicate), m.max_in_flight, m.protocol);
    this.welcomed = carrier;
    this.parts.uploader.attach(carrier, m.last_mutation_id, { rekey: this.superseded });
    this.superseded = false;
    void this.drafts.onConnected().catch((err: unknown) => this.state.fail(failureCode(err, 'draft'), String(err)));
  }
}
