/**
 * What the sync hub asks of the rest of the server (docs/sync-protocol.md): the hub does the
 * framing, ordering and timers of sockets; everything that reads or writes the database is
 * one of these hooks, built from the services by `service-hooks.ts`. Like Hocuspocus's
 * extension hooks, each is named for the moment the hub calls it.
 */
import type { ServerMessage } from '@fieldchart/schema/sync';
import type { FeedEnd, FeedReadOptions, FeedSink, FeedTable, TableFeedEnd, TableReadOptions } from '../services/sync/feed.ts';
import type { BatchOutcome, MutationDevice, MutationMessage } from '../services/sync/mutation-ledger.ts';
import type { Refusal } from './close-reasons.ts';
import type { Drafts } from './drafts.ts';

/** What a socket needs to know of its device once its token is accepted. */
export interface SyncIdentity {
  readonly userId: string;
  readonly sessionId: string;
  readonly expiresAt: Date;
  /** The seat the socket is opened under: a different one later closes it (4410). */
  readonly organizationId: string | null;
  readonly timeZone: string;
  /** The device's last processed mutation id (`welcome.last_mutation_id`). */
  readonly lastMutationId: number;
}

export type Authenticated = { readonly ok: true; readonly identity: SyncIdentity } | { readonly ok: false; readonly refusal: Refusal };

export interface SyncHooks {
  /** hello and in-band `auth`: the token verified as a bearer token, the session live, and the device's standing. */
  authenticate(token: string, clientId: string): Promise<Authenticated>;
  /**
   * hello, once the token is accepted: the device recorded as seen and judged — revoked, or
   * holding (`holdsData`: it sent a cursor) data of an organization seat that has ended.
   */
  admit(identity: SyncIdentity, clientId: string, holdsData: boolean): Promise<Refusal | null>;
  /**
   * A revocation, disable or seat change somewhere: the session's state, the device's (with
   * `clientId`) and the user's seat now.
   */
  scope(userId: string, sessionId: string, clientId?: string): Promise<{ readonly refusal: Refusal | null; readonly organizationId: string | null }>;
  /**
   * The change feed from `cursor`, its changes handed to `sink` as they are built; with
   * `clientId` (protocol 2), also that device's acked_through in the same snapshot.
   */
  feed(userId: string, cursor: string | null, now: Date, options: FeedReadOptions, sink: FeedSink): Promise<FeedEnd>;
  /**
   * Pokes of some tables: their changes since `since` (their last table diff's snapshot, or
   * null for the cursor's), the cursor unchanged; null, with nothing sent, when only `feed` can
   * answer (feed.ts `streamTable`).
   */
  feedTable(
    userId: string,
    tables: readonly FeedTable[],
    cursor: string,
    since: string | null,
    now: Date,
    options: TableReadOptions,
    sink: Pick<FeedSink, 'change'>,
  ): Promise<TableFeedEnd | null>;
  /** A batch of one device's mutations, exactly once and in order (shared with `POST /sync/mutations`). */
  applyMutations(device: MutationDevice, batch: readonly MutationMessage[]): Promise<BatchOutcome>;
  /** Draft documents: `doc_open` / `doc` / `doc_close` of open sockets and other nodes' notices. */
  readonly drafts: Drafts;
  /** Tells every node a device connected again, so an older socket of it elsewhere closes (4409). */
  announce(userId: string, clientId: string, connectionId: string): Promise<void>;
}

/** The hub's logger: PHI never goes in; errors through `safeError`. */
export interface SyncLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/**
 * How much of its outbox a protocol 3 device may keep unanswered (`welcome.max_in_flight`),
 * and how many of those one transaction applies. Larger is faster (a transaction's fixed cost
 * is paid over more mutations) but holds the database longer: on PGlite's one session every
 * other request waits behind each transaction.
 */
export interface UploadWindow {
  readonly inFlight: number;
  readonly perTransaction: number;
}

/**
 * Keys dropped from a device's JSON as it is parsed, on the socket and over HTTP
 * (secure-json-parse, Fastify's parser): harmless to JSON.parse, not to every consumer of the
 * object. A mutation holding one is judged without it.
 */
export const DROPPED_JSON_KEYS = { protoAction: 'remove', constructorAction: 'remove' } as const;

/** PGlite: one session, so short transactions. */
export const ONE_SESSION_UPLOAD: UploadWindow = { inFlight: 500, perTransaction: 250 };
/** PostgreSQL: a transaction holds one connection of the pool, and locks only this device's rows. */
export const POOLED_UPLOAD: UploadWindow = { inFlight: 2000, perTransaction: 1000 };

/** What a connection sees of the hub that holds it. */
export interface ConnectionHost {
  readonly hooks: SyncHooks;
  readonly log: SyncLog;
  readonly upload: UploadWindow;
  now(): Date;
  /** Whether one more socket of `userId` fits, not counting this device's own (it will be superseded). */
  hasRoomFor(userId: string, clientId: string): boolean;
  attach(connection: HeldConnection): void;
  detach(connection: HeldConnection): void;
}

/** A connection as the hub holds it. */
export interface HeldConnection {
  readonly id: string;
  readonly userId: string;
  readonly clientId: string;
  /** A poke: of one table (its changes may be read alone), or null for every table. */
  requestFeed(table?: FeedTable | null): void;
  recheck(): Promise<void>;
  close(reason: 'superseded' | 'going_away', text: string): void;
  /** Pings the device; drops it if it did not answer the previous ping. */
  heartbeat(): void;
  send(message: ServerMessage): void;
  /** Frames received and not handled yet (/metrics). */
  readonly queueDepth: number;
}
