/**
 * The sync state machine: connect → `hello` → `welcome` (whose data, reconcile the outbox,
 * prune to the window) → the uploader drains the outbox while the change feed is applied →
 * stay subscribed; on a close, reconnect with backoff (or stop, as the close code says).
 * The engine decides only what happens next and whom to tell; the rest is its collaborators':
 * credentials the session's (session.ts), which socket says hello sockets.ts's, answers to
 * mutations the uploader's (uploader.ts),
 * frames other than `welcome` frames.ts's routes, what a close means after-close.ts's, when to
 * try again reconnect.ts's, the HTTP carrier http-fallback.ts's, whose data device-data.ts's,
 * `whenSynced` waiters.ts's, drafts DraftSync's, the other tabs TabSync's. Incoming messages
 * are handled one after another (each may write the device database), and every background
 * failure becomes status, never an unhandled rejection.
 */
import { CLOSE_CODES, type ClientMessage, type ServerMessage } from '@fieldchart/schema/sync';
import { failureCode } from '../storage/storage-errors.ts';
import type { FetchLike, RestClient } from '../rest/index.ts';
import type { WebSocketConstructor } from '../platform/websocket.ts';
import { platformNetwork, type NetworkStatus } from '../platform/network-status.ts';
import type { LocalDb } from '../storage/local-db.ts';
import { clientIdOf, type StoredSession } from '../storage/meta.ts';
import { failureCount, pendingCount } from '../storage/outbox.ts';
import { stepAfterClose, WENT_OFFLINE, type EndStep } from './after-close.ts';
import type { BackoffOptions } from './backoff.ts';
import { socketCarrier } from './carriers.ts';
import type { Connection } from './connection.ts';
import { DeviceData, storedStatus } from './device-data.ts';
import { DraftSync } from './drafts.ts';
import { Emitter } from './emitter.ts';
import type { SyncEvents } from './events.ts';
import { FeedReceiver } from './feed.ts';
import { frameRouter, type RoutedFrame } from './frames.ts';
import { HttpFallback } from './http-fallback.ts';
import { Session } from './session.ts';
import { Reconnect } from './reconnect.ts';
import { Sockets } from './sockets.ts';
import { StatusStore, type SyncStatus } from './status.ts';
import type { TabLink } from './tab-link.ts';
import { TabSync } from './tab-sync.ts';
import { Uploader, type Carrier } from './uploader.ts';
import { SyncWaiters } from './waiters.ts';

export type { SyncEvents } from './events.ts';

/** A tab that began to lead and could not read the shared database yet tries again after this. */
const LEAD_RETRY_MS = 100;

/**
 * The status the app reads and the events it hears. Made before the engine, so that the device
 * database can report a storage failure into them while it opens.
 */
export interface SyncSignals {
  readonly events: Emitter<SyncEvents>;
  readonly state: StatusStore;
}

export function syncSignals(): SyncSignals {
  const events = new Emitter<SyncEvents>();
  return { events, state: new StatusStore((s) => events.emit('status', s)) };
}

export interface SyncEngineOptions {
  readonly db: LocalDb;
  /** Default: new ones. */
  readonly signals?: SyncSignals;
  readonly baseUrl: string;
  readonly url: string;
  readonly WebSocket: WebSocketConstructor;
  readonly fetch?: FetchLike;
  readonly backoff?: BackoffOptions;
  readonly submitWaitMs?: number;
  /** The first handshake's deadline (connection.ts OPEN_TIMEOUT_MS). */
  readonly openTimeoutMs?: number;
  /** The platform's network; default: the browser's (`online`/`offline` events), none in Node. Null: none. */
  readonly network?: NetworkStatus | null;
  /**
   * Browsers, several tabs on one device database: only the tab holding the lock syncs; the
   * others follow through this link (tab-link.ts). Without it this engine is the only one.
   */
  readonly tabs?: TabLink;
}

export class SyncEngine {
  readonly events: Emitter<SyncEvents>;
  readonly state: StatusStore;
  readonly session: Session;
  readonly drafts: DraftSync;
  private readonly uploader: Uploader;
  private readonly feed: FeedReceiver;
  private readonly fallback: HttpFallback;
  private readonly sockets: Sockets;
  /** The socket's carrier once the server said `welcome` (null before, and for HTTP). */
  private welcomed: Carrier | null = null;
  private running = false;
  private closed = false;
  /** The last socket was taken over by another install with this client id (4409). */
  private superseded = false;
  /** Incoming messages and closes, handled strictly in order. */
  private queue: Promise<void> = Promise.resolve();
  private readonly reconnect: Reconnect;
  private readonly waiters: SyncWaiters;
  private readonly device: DeviceData;
  private readonly route: (m: RoutedFrame) => Promise<void>;
  private readonly network: NetworkStatus | null;
  private readonly unwatchNetwork: () => void;
  /** The other tabs of the app, when the database is shared (null: this engine is the only one). */
  private readonly tabs: TabSync | null = null;

  constructor(private readonly opts: SyncEngineOptions) {
    const db = opts.db;
    ({ events: this.events, state: this.state } = opts.signals ?? syncSignals());
    this.reconnect = new Reconnect(() => void this.connect(), {
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
      ...(opts.openTimeoutMs !== undefined ? { firstHandshakeMs: opts.openTimeoutMs } : {}),
    });
    this.session = new Session({
      db,
      status: this.state,
      baseUrl: opts.baseUrl,
      ...(opts.fetch ? { fetch: opts.fetch } : {}),
      // A session ended with the device's revocation or its account's disabling: the device
      // is wiped, as on 4411 and 4403.
      onEnded: async (reason) => {
        await this.endSession(reason);
        if (reason !== 'unauthorized') await this.device.wipeInBackground();
      },
    });
    this.drafts = new DraftSync({
      db,
      send: (m) => this.send(m),
      onConfirmed: () => void this.uploader.pump(),
      onError: (code, message) => this.state.fail(code, message),
      submitWaitMs: opts.submitWaitMs ?? 15_000,
      ...(opts.tabs ? { relay: (doc: string, update: Uint8Array) => this.tabs?.post({ type: 'draft', doc, update }) } : {}),
    });
    this.uploader = new Uploader({
      db,
      drafts: this.drafts,
      status: this.state,
      events: this.events,
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
      onAnswered: async () => {
        const helloClientId = this.sockets.helloClientId;
        await this.feed.settleAnswered(helloClientId !== null && helloClientId === (await clientIdOf(db)));
        await this.waiters.settle();
      },
      // A socket said hello under the old id: a new one says it under the new id.
      onRekeyed: () => (this.sockets.current ? this.sockets.close(CLOSE_CODES.client_reconnect, 'new client id') : this.fallback.takeUpIfWanted()),
    });
    this.fallback = new HttpFallback({
      db,
      rest: this.session.rest,
      uploader: this.uploader,
      session: () => this.session.current,
      websocketsBlocked: () => this.reconnect.websocketsBlocked,
      socketless: () => this.welcomed === null && this.running,
      onEnded: (end) => this.enqueue(() => this.endAndWipe(end)),
    });
    this.feed = new FeedReceiver({ db, status: this.state, events: this.events });
    this.sockets = new Sockets({
      db,
      url: opts.url,
      WebSocket: opts.WebSocket,
      reconnect: this.reconnect,
      tokenForHello: () => this.session.tokenForHello(),
      wanted: () => this.leading && this.running && !this.closed,
      retryLater: () => this.scheduleReconnect(),
      opened: () => this.fallback.letGo(),
      message: (conn, m) => this.enqueue(() => this.handle(conn, m)),
      invalid: (conn, reason) => {
        this.state.fail('bad_message', reason);
        // Resume from the last stored checkpoint rather than act on a frame we cannot read.
        conn.close(CLOSE_CODES.bad_message, 'bad message');
      },
      closed: (conn, code, reason) => this.enqueue(() => this.handleClose(conn, code, reason)),
      onError: (err) => this.state.failWith(err, 'internal'),
    });
    this.waiters = new SyncWaiters({ status: this.state, caughtUp: () => this.feed.caughtUp() });
    this.route = frameRouter({
      feed: this.feed,
      uploader: this.uploader,
      drafts: this.drafts,
      waiters: this.waiters,
      tokenAccepted: (expiresAt) => this.keepTokenFresh(expiresAt),
      carrier: () => this.welcomed,
    });
    this.device = new DeviceData({ db, drafts: this.drafts, status: this.state, events: this.events, tellTabs: () => this.tabs?.post({ type: 'reset' }) });
    this.network = opts.network === undefined ? platformNetwork() : opts.network;
    this.unwatchNetwork = this.network?.watch({ offline: () => this.wentOffline(), online: () => this.cameOnline() }) ?? (() => {});
    if (opts.tabs) {
      this.tabs = new TabSync(opts.tabs, {
        db,
        state: this.state,
        events: this.events,
        drafts: this.drafts,
        written: () => this.written(),
        whenSynced: () => this.whenSynced(),
        dropConnection: () => this.dropConnection(),
        reloadSession: () => this.reloadSession(),
        enqueue: (fn) => {
          this.queue = this.queue.then(fn).catch((err: unknown) => this.state.failWith(err, 'internal'));
        },
      });
    }
  }

  /** This engine opens the socket: always without tabs, with them while this tab holds the lock. */
  private get leading(): boolean {
    return this.tabs === null || this.tabs.leading;
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
    if (this.tabs && !(await this.tabs.lead(() => this.enqueue(() => this.becomeLeader())))) return;
    if (session) this.run();
  }

  /** A new session (sign-in): stored, then syncing starts over with it. */
  async useSession(session: StoredSession): Promise<void> {
    await this.session.begin(session);
    this.restart();
    this.tabs?.tellLeader({ type: 'session' });
  }

  /** Stops syncing and forgets the session (the caller clears data as it decides). */
  async endSession(halted: string): Promise<void> {
    this.halt(halted);
    await this.session.forget();
    this.state.patch({ signedIn: false });
    this.tabs?.tellLeader({ type: 'session' });
  }

  /** A local write was made: show it and upload it. */
  async written(): Promise<void> {
    try {
      this.state.patch({ pending: await pendingCount(this.opts.db), failed: await failureCount(this.opts.db) });
    } catch (err) {
      // The write is made; a count that cannot be read now (a full storage) is state, not its
      // failure. One more is pending at least, so `whenSynced` does not answer early.
      this.state.failWith(err, 'internal');
      this.state.patch({ pending: this.state.value.pending + 1 });
    }
    this.events.emit('change', { reason: 'write' });
    // The write is in the shared outbox: the leading tab uploads it.
    if (!this.leading) this.tabs?.tellLeader({ type: 'written' });
    else void this.uploader.pump();
  }

  /**
   * Resolves when the outbox is empty, the device is current and — on protocol 2 — every
   * acknowledged write's own copy has given way to the server's rows (SyncClient.whenSynced).
   */
  whenSynced(): Promise<void> {
    if (this.tabs && !this.leading) return this.tabs.whenSynced();
    return this.waiters.wait();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.unwatchNetwork();
    this.halt('closed', new Error('the client was closed'));
    this.tabs?.close(new Error('the client was closed'));
    await this.queue.catch(() => {});
    await this.drafts.flush();
    this.drafts.destroy();
    this.events.clear();
  }

  /** Drops the socket now (tests, or an app going to the background); reconnects with backoff. */
  dropConnection(): void {
    if (!this.leading) return this.tabs?.tellLeader({ type: 'reconnect' });
    this.sockets.close(CLOSE_CODES.client_reconnect, 'client reconnect');
  }

  /** The platform lost the network: an open socket is dead even if it does not know it yet. */
  private wentOffline(): void {
    this.sockets.close(CLOSE_CODES.client_reconnect, WENT_OFFLINE);
  }

  /** The network is back: connect now, not when the backoff would have tried next. */
  private cameOnline(): void {
    if (!this.running || this.closed) return;
    this.reconnect.resetDelay();
    if (this.sockets.busy) return;
    this.reconnect.cancel();
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
    this.uploader.detach();
    this.state.patch({ halted: reason, connected: false, current: false });
    this.waiters.rejectAll(err);
  }

  private async connect(): Promise<void> {
    if (this.leading && this.running && !this.closed) await this.sockets.connect();
  }

  /** Closes the socket from this side, now; nothing reconnects unless `run` says so. */
  private disconnect(): void {
    this.sockets.forget();
    this.afterClose();
    this.reconnect.cancel();
  }

  /** What every end of a socket resets, whoever ended it. */
  private afterClose(): void {
    if (this.welcomed) this.uploader.detach(this.welcomed);
    this.welcomed = null;
    this.drafts.onDisconnected();
    this.session.stopKeepingFresh();
    this.enqueue(() => this.feed.disconnected());
    this.state.patch({ connected: false, uploading: false, downloading: false, current: false });
  }

  private scheduleReconnect(atLeastMs = 0): void {
    if (!this.running || this.closed) return;
    this.reconnect.schedule(atLeastMs);
  }

  private enqueue(fn: () => Promise<void>): void {
    this.queue = this.queue.then(fn).catch((err: unknown) => {
      this.state.failWith(err, 'internal');
      // A failure half way through a message leaves the socket's state unknown: start over.
      this.sockets.close(CLOSE_CODES.client_reconnect, 'client error');
    });
  }

  /** The socket's token is refreshed in band before `expiresAt`. */
  private keepTokenFresh(expiresAt: string): void {
    this.session.keepFresh(expiresAt, (token) => this.send({ type: 'auth', token }));
  }

  private send(m: ClientMessage): boolean {
    return this.welcomed !== null && this.sockets.current !== null ? this.sockets.current.send(m) : false;
  }

  private async handleClose(conn: Connection, code: number, reason: string): Promise<void> {
    if (!this.sockets.ended(conn)) return;
    const wasWelcomed = this.welcomed !== null;
    this.afterClose();
    const step = stepAfterClose(code, reason, { welcomed: wasWelcomed, offline: this.network?.online === false });
    // A spare still opening takes the place of a socket that failed; on any other step it goes too.
    const handedOver = this.sockets.handOver(this.running && step.next === 'retry');
    if (!this.running) return;
    if (step.next === 'end') return this.endAndWipe(step);
    if (step.error) this.state.fail(step.error.code, step.error.message);
    switch (step.next) {
      case 'refresh':
        this.session.markRefused();
        return this.scheduleReconnect();
      case 'wipe':
        await this.device.wipeInBackground();
        return this.scheduleReconnect();
      case 'superseded':
        this.superseded = true;
        return this.scheduleReconnect(step.pauseMs);
      case 'halt':
        return this.halt(step.reason);
      case 'retry':
        this.reconnect.count(step.attempt);
        if (handedOver) return;
        this.scheduleReconnect();
        await this.fallback.takeUpIfWanted();
    }
  }

  /**
   * Removes the user's data from the device — synced rows, the outbox and drafts, unsynced
   * work included — and replaces the device key; the app hears a reset. Sign-out, another
   * user signing in, and an account closed on the server all end here.
   */
  async wipeUserData(): Promise<void> {
    return this.device.wipe();
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
    await this.device.wipeInBackground();
  }

  // ——— tabs ———

  /**
   * This tab now holds the lock (the app's first tab, or the leader closed): everything is in
   * the shared database — the session another tab may have stored, the outbox with writes any
   * tab queued — so syncing starts from there, and what this tab waited for is now its own.
   */
  private async becomeLeader(): Promise<void> {
    if (this.closed || !this.tabs) return;
    this.waiters.adopt(this.tabs.takeWaiters());
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
    this.tabs.announce();
    if (session) this.run();
  }

  /** A follower signed in or out: the stored session is the truth. */
  private async reloadSession(): Promise<void> {
    const session = await this.session.load();
    if (!session) {
      this.halt('signed_out');
      this.drafts.clear();
      this.state.patch({ signedIn: false, pending: await pendingCount(this.opts.db), failed: await failureCount(this.opts.db) });
      return;
    }
    this.restart();
  }

  // ——— messages ———

  private async handle(conn: Connection, m: ServerMessage): Promise<void> {
    if (this.sockets.current !== conn) return;
    if (m.type !== 'welcome') return this.route(m);
    // Re-keyed (over HTTP) while this socket was opening: it speaks for the old id.
    if (this.sockets.helloClientId !== (await clientIdOf(this.opts.db))) return conn.close(CLOSE_CODES.client_reconnect, 'new client id');
    return this.welcome(conn, m);
  }

  private async welcome(conn: Connection, m: Extract<ServerMessage, { type: 'welcome' }>): Promise<void> {
    const db = this.opts.db;
    const claim = await this.device.claim(m.user_id);
    // Another clinician's unsynced work is here: it is never uploaded as this user.
    if (claim === 'blocked') return this.halt('other_user_outbox', new Error('sync stopped: another user’s writes are on this device'));
    if (claim === 'restart') return conn.close(CLOSE_CODES.client_reconnect, 'user changed');
    // The HTTP fallback needs the session's user.
    await this.session.adoptUser(m.user_id);
    await this.feed.welcomed(m);
    conn.welcomed();
    this.reconnect.welcomed();
    this.keepTokenFresh(m.token_expires_at);
    this.state.patch({ connected: true, halted: null, pending: await pendingCount(db), downloading: true, current: false });
    this.events.emit('change', { reason: 'feed' });
    const carrier = socketCarrier(conn, (duplicate) => this.feed.settleAfter(duplicate), m.max_in_flight);
    this.welcomed = carrier;
    this.uploader.attach(carrier, m.last_mutation_id, { rekey: this.superseded });
    this.superseded = false;
    void this.drafts.onConnected().catch((err: unknown) => this.state.fail(failureCode(err, 'draft'), String(err)));
  }
}
