/**
 * The engine's collaborators, made and tied to each other in one place. What they ask of one
 * another is settled here; what they ask of the state machine goes through {@link EngineSteps},
 * which sync-engine.ts answers. Nothing here decides: every choice is the engine's or a
 * collaborator's own.
 */
import { CLOSE_CODES, type ClientMessage, type ServerMessage } from '@fieldchart/schema/sync';
import type { FetchLike } from '../rest/index.ts';
import type { WebSocketConstructor } from '../platform/websocket.ts';
import { platformNetwork, type NetworkStatus } from '../platform/network-status.ts';
import type { LocalDb } from '../storage/local-db.ts';
import { clientIdOf } from '../storage/meta.ts';
import { WENT_OFFLINE, type EndStep } from './after-close.ts';
import type { BackoffOptions } from './backoff.ts';
import type { Connection } from './connection.ts';
import { DeviceData } from './device-data.ts';
import { DraftSync } from './drafts.ts';
import { Emitter } from './emitter.ts';
import type { SyncEvents } from './events.ts';
import { FeedReceiver } from './feed.ts';
import { frameRouter, type RoutedFrame } from './frames.ts';
import { HttpFallback } from './http-fallback.ts';
import { Reconnect } from './reconnect.ts';
import { Session } from './session.ts';
import { Sockets } from './sockets.ts';
import { StatusStore } from './status.ts';
import type { TabLink } from './tab-link.ts';
import { TabSync } from './tab-sync.ts';
import { Uploader, type Carrier } from './uploader.ts';
import { SyncWaiters } from './waiters.ts';

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

/** What the collaborators ask of the state machine. */
export interface EngineSteps {
  /** The reconnect timer fired, or the network came back. */
  connect(): void;
  cameOnline(): void;
  /** Syncing runs and the client is open (whether this tab leads is asked apart). */
  syncing(): boolean;
  scheduleReconnect(): void;
  /** The welcomed socket's carrier (null before `welcome`, and over HTTP). */
  carrier(): Carrier | null;
  message(conn: Connection, m: ServerMessage): void;
  closed(conn: Connection, code: number, reason: string): void;
  /** Stops syncing and forgets the session. */
  endSession(reason: string): Promise<void>;
  /** The server ended this device's right to the data over HTTP (403 `device_revoked`). */
  refused(step: EndStep): void;
  /** Runs `fn` in the engine's order; its failure becomes state (the socket stays). */
  inOrder(fn: () => Promise<void>): void;
  reloadSession(): Promise<void>;
}

export interface EngineParts {
  readonly events: Emitter<SyncEvents>;
  readonly state: StatusStore;
  readonly session: Session;
  readonly drafts: DraftSync;
  readonly uploader: Uploader;
  readonly feed: FeedReceiver;
  readonly fallback: HttpFallback;
  readonly sockets: Sockets;
  readonly reconnect: Reconnect;
  readonly waiters: SyncWaiters;
  readonly device: DeviceData;
  readonly route: (m: RoutedFrame) => Promise<void>;
  readonly network: NetworkStatus | null;
  readonly unwatchNetwork: () => void;
  /** The other tabs of the app, when the database is shared (null: this engine is the only one). */
  readonly tabs: TabSync | null;
  /** This engine opens the socket: always without tabs, with them while this tab holds the lock. */
  leading(): boolean;
  /** The socket's token is refreshed in band before `expiresAt`. */
  keepTokenFresh(expiresAt: string): void;
  /** Sends on the welcomed socket; false when there is none. */
  send(m: ClientMessage): boolean;
  /** A local write was made: shown, and uploaded by the leading tab. */
  written(): Promise<void>;
  /**
   * Resolves when the outbox is empty, the device is current and — on protocol 2 — every
   * acknowledged write's own copy has given way to the server's rows (SyncClient.whenSynced);
   * a following tab asks the leader.
   */
  whenSynced(): Promise<void>;
  /** Drops the socket now (tests, or an app going to the background); reconnects with backoff. */
  dropConnection(): void;
}

export function engineParts(opts: SyncEngineOptions, steps: EngineSteps): EngineParts {
  const { db } = opts;
  const { events, state } = opts.signals ?? syncSignals();
  const leading = () => tabs === null || tabs.leading;
  const send = (m: ClientMessage) => (steps.carrier() !== null && sockets.current !== null ? sockets.current.send(m) : false);
  const keepTokenFresh = (expiresAt: string) => session.keepFresh(expiresAt, (token) => send({ type: 'auth', token }));
  const written = async () => {
    await device.counted();
    events.emit('change', { reason: 'write' });
    // The write is in the shared outbox: the leading tab uploads it.
    if (!leading()) tabs?.tellLeader({ type: 'written' });
    else void uploader.pump();
  };
  const whenSynced = () => (tabs && !leading() ? tabs.whenSynced() : waiters.wait());
  const dropConnection = (): void => {
    if (leading()) sockets.close(CLOSE_CODES.client_reconnect, 'client reconnect');
    else tabs?.tellLeader({ type: 'reconnect' });
  };

  const reconnect = new Reconnect(() => steps.connect(), {
    ...(opts.backoff ? { backoff: opts.backoff } : {}),
    ...(opts.openTimeoutMs !== undefined ? { firstHandshakeMs: opts.openTimeoutMs } : {}),
  });
  const session = new Session({
    db,
    status: state,
    baseUrl: opts.baseUrl,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
    // A session ended with the device's revocation or its account's disabling: the device is
    // wiped, as on 4411 and 4403.
    onEnded: async (reason) => {
      await steps.endSession(reason);
      if (reason !== 'unauthorized') await device.wipeInBackground();
    },
  });
  const drafts = new DraftSync({
    db,
    send,
    onConfirmed: () => void uploader.pump(),
    onError: (code, message) => state.fail(code, message),
    submitWaitMs: opts.submitWaitMs ?? 15_000,
    ...(opts.tabs ? { relay: (doc: string, update: Uint8Array) => tabs?.post({ type: 'draft', doc, update }) } : {}),
  });
  const uploader: Uploader = new Uploader({
    db,
    drafts,
    status: state,
    events,
    ...(opts.backoff ? { backoff: opts.backoff } : {}),
    onAnswered: async () => {
      const helloClientId = sockets.helloClientId;
      await feed.settleAnswered(helloClientId !== null && helloClientId === (await clientIdOf(db)));
      await waiters.settle();
    },
    // A socket said hello under the old id: a new one says it under the new id.
    onRekeyed: () => (sockets.current ? sockets.close(CLOSE_CODES.client_reconnect, 'new client id') : fallback.takeUpIfWanted()),
  });
  const fallback = new HttpFallback({
    db,
    rest: session.rest,
    uploader,
    session: () => session.current,
    websocketsBlocked: () => reconnect.websocketsBlocked,
    socketless: () => steps.carrier() === null && steps.syncing(),
    onEnded: (end) => steps.refused(end),
  });
  const feed = new FeedReceiver({ db, status: state, events });
  const sockets: Sockets = new Sockets({
    db,
    url: opts.url,
    WebSocket: opts.WebSocket,
    reconnect,
    tokenForHello: () => session.tokenForHello(),
    wanted: () => leading() && steps.syncing(),
    retryLater: () => steps.scheduleReconnect(),
    opened: () => fallback.letGo(),
    message: (conn, m) => steps.message(conn, m),
    invalid: (conn, reason) => {
      state.fail('bad_message', reason);
      // Resume from the last stored checkpoint rather than act on a frame we cannot read.
      conn.close(CLOSE_CODES.bad_message, 'bad message');
    },
    closed: (conn, code, reason) => steps.closed(conn, code, reason),
    onError: (err) => state.failWith(err, 'internal'),
  });
  const waiters = new SyncWaiters({ status: state, caughtUp: () => feed.caughtUp() });
  const route = frameRouter({ feed, uploader, drafts, waiters, tokenAccepted: keepTokenFresh, carrier: () => steps.carrier() });
  const device = new DeviceData({ db, drafts, status: state, events, tellTabs: () => tabs?.post({ type: 'reset' }) });
  const network = opts.network === undefined ? platformNetwork() : opts.network;
  // The platform lost the network: an open socket is dead even if it does not know it yet.
  const unwatchNetwork =
    network?.watch({ offline: () => sockets.close(CLOSE_CODES.client_reconnect, WENT_OFFLINE), online: () => steps.cameOnline() }) ?? (() => {});
  const tabs: TabSync | null = opts.tabs
    ? new TabSync(opts.tabs, {
        db,
        state,
        events,
        drafts,
        written,
        whenSynced,
        dropConnection,
        reloadSession: () => steps.reloadSession(),
        enqueue: (fn) => steps.inOrder(fn),
      })
    : null;
  return { events, state, session, drafts, uploader, feed, fallback, sockets, reconnect, waiters, device, route, network, unwatchNetwork, tabs, leading, keepTokenFresh, send, written, whenSynced, dropConnection };
}
