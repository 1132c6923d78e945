/**
 * One device's socket (docs/sync-protocol.md): first-message authentication, in-band token
 * refresh, the change feed from the device's cursor, ordered exactly-once mutations and the
 * draft documents it has open.
 */
import { randomUUID } from 'node:crypto';
import type { WebSocket } from 'ws';
import {
  CLOSE_CODES,
  PROTOCOL_VERSION,
  clientMessage,
  incomingMutation,
  type Change,
  type ClientMessage,
  type CloseCodeName,
  type ServerMessage,
} from '@fieldchart/schema/sync';
import { safeError } from '../log-safety.ts';
import type { SyncHubContext } from './hub.ts';
import type { DraftPeer } from './drafts.ts';
import { windowOf } from './feed.ts';
import { applyMutationBatch, lastMutationIdOf, type BatchOutcome, type MutationDevice, type MutationMessage } from './apply-mutations.ts';

type HelloMessage = Extract<ClientMessage, { type: 'hello' }>;
/** A message as the inbox holds it: mutations not judged yet (each is answered on its own). */
type InboxMessage = Exclude<ClientMessage, { type: 'mutation' }> | MutationMessage;

/** Changes per `changes` message, and bytes (docs: Limits). */
const BATCH_CHANGES = 500;
const BATCH_BYTES = 1024 * 1024;
/** Mutations applied in one transaction (each in its own savepoint). */
const MUTATIONS_PER_TRANSACTION = 100;
const HELLO_TIMEOUT_MS = 10_000;
/**
 * A phone that drops off a network sends no FIN: without pings its socket (and its place in
 * the per-user limit) would linger until TCP gives up, minutes later.
 */
const PING_INTERVAL_MS = 30_000;
/**
 * Messages waiting to be handled: a device keeps at most 100 mutations unanswered (the
 * protocol's limit) plus its draft traffic; more means it ignores the limit.
 */
const MAX_INBOX = 500;
/** Bytes queued towards a device before it counts as not reading. */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

export class SyncConnection implements DraftPeer {
  readonly id = randomUUID();
  userId = '';
  clientId = '';
  private sessionId = '';
  /** The seat the socket was opened under: a different one closes it (4410). */
  private organizationId: string | null = null;
  private state: 'hello' | 'open' | 'closed' = 'hello';
  private cursor: string | null = null;
  private readonly inbox: InboxMessage[] = [];
  private processing = false;
  private feedRunning = false;
  private feedAgain = false;
  /**
   * Set when a mutation was answered `retry`: the frames behind it are already on the wire,
   * and applying them would move last_mutation_id past the one the device will resend. They
   * are answered `retry` too until the device resends from that id.
   */
  private retryingFrom: number | null = null;
  private helloReceived = false;
  private helloTimer: NodeJS.Timeout | null;
  private expiryTimer: NodeJS.Timeout | null = null;
  private readonly pingTimer: NodeJS.Timeout;
  private alive = true;

  constructor(
    private readonly socket: WebSocket,
    private readonly hub: SyncHubContext,
  ) {
    this.helloTimer = setTimeout(() => this.close('auth_timeout', 'No hello within 10 s'), HELLO_TIMEOUT_MS);
    this.pingTimer = setInterval(() => {
      if (!this.alive) return this.socket.terminate();
      this.alive = false;
      this.socket.ping();
    }, PING_INTERVAL_MS);
    this.pingTimer.unref();
    socket.on('pong', () => (this.alive = true));
    socket.on('message', (data, isBinary) => this.onFrame(data, isBinary));
    socket.on('close', () => this.onClosed());
    socket.on('error', () => this.onClosed());
  }

  get isOpen(): boolean {
    return this.state === 'open';
  }

  send(message: ServerMessage): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    // A device that stops reading (or reads slower than it is sent to) is dropped rather than
    // buffered without bound; it resumes from its cursor when it reconnects.
    if (this.socket.bufferedAmount > MAX_BUFFERED_BYTES) return void this.socket.terminate();
    this.socket.send(JSON.stringify(message));
  }

  /** Resolves once the frame is handed to the OS: big feeds wait instead of piling up in memory. */
  private sendAndDrain(message: ServerMessage | string): Promise<void> {
    return new Promise((resolve) => {
      if (this.socket.readyState !== this.socket.OPEN) return resolve();
      this.socket.send(typeof message === 'string' ? message : JSON.stringify(message), () => resolve());
    });
  }

  close(reason: CloseCodeName, text = ''): void {
    if (this.state === 'closed') return;
    this.onClosed();
    this.socket.close(CLOSE_CODES[reason], text.slice(0, 120));
  }

  private onClosed(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    if (this.helloTimer) clearTimeout(this.helloTimer);
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    clearInterval(this.pingTimer);
    this.hub.detach(this);
  }

  private onFrame(data: unknown, isBinary: boolean): void {
    if (this.state === 'closed') return;
    let message: InboxMessage | null = null;
    if (!isBinary) {
      try {
        // `__proto__` keys are dropped (as over HTTP): harmless to JSON.parse, not to every
        // consumer of the object.
        const json: unknown = JSON.parse(String(data), (key, value: unknown) => (key === '__proto__' ? undefined : value));
        const parsed = clientMessage.safeParse(json);
        // A mutation with a valid id is answered whatever else is wrong with it (an unknown
        // name, bad arguments): closing the socket would only make the device resend it.
        const mutation = parsed.success ? null : incomingMutation.safeParse(json);
        message = parsed.success ? parsed.data : mutation?.success ? mutation.data : null;
      } catch {
        message = null;
      }
    }
    if (!message) return this.close('bad_message', 'Not a valid sync message');
    // Decided on arrival, not on the state: frames may follow hello before welcome is sent (they
    // wait in the inbox), and a second hello must never reach hello() — it would swap the
    // socket's identity after the first was checked.
    if (!this.helloReceived && message.type !== 'hello') return this.close('bad_message', 'The first message must be hello');
    if (this.helloReceived && message.type === 'hello') return this.close('bad_message', 'hello was already received');
    this.helloReceived = true;
    if (this.inbox.length >= MAX_INBOX) return this.close('bad_message', 'Too many messages waiting; wait for answers');
    this.inbox.push(message);
    void this.process();
  }

  /** One message at a time, in arrival order; consecutive mutations share a transaction. */
  private async process(): Promise<void> {
    if (this.processing) return;
    this.processing = true;
    try {
      while (this.inbox.length > 0 && this.state !== 'closed') {
        const head = this.inbox[0] as InboxMessage;
        if (head.type === 'mutation') {
          // A note takes the draft's text: the draft messages before it must be stored first.
          await this.draftsSettled();
          let n = 0;
          while (n < this.inbox.length && n < MUTATIONS_PER_TRANSACTION && this.inbox[n]?.type === 'mutation') n++;
          await this.applyMutations(this.inbox.splice(0, n) as MutationMessage[]);
          continue;
        }
        this.inbox.shift();
        await this.handle(head);
      }
    } catch (err) {
      this.hub.log.error({ err: safeError(err), connection: this.id }, 'sync connection failed');
      this.close('internal_error');
    } finally {
      this.processing = false;
    }
  }

  private async handle(message: Exclude<InboxMessage, MutationMessage>): Promise<void> {
    switch (message.type) {
      case 'hello':
        return this.hello(message);
      case 'auth':
        return this.reauthenticate(message.token);
      // Draft messages keep their order in the drafts module (one lane per socket and
      // document); not waiting for them here lets typing on one device reach the others while
      // the previous keystroke is still being stored.
      case 'doc_open':
        return this.track(this.hub.drafts.open(this, message.doc));
      case 'doc':
        return this.track(this.hub.drafts.receive(this, message.doc, message.message));
      case 'doc_close':
        return this.hub.drafts.close(this, message.doc);
    }
  }

  private readonly draftWork = new Set<Promise<void>>();

  private track(work: Promise<void>): void {
    const settled = work.then(
      () => {},
      (err: unknown) => {
        this.hub.log.error({ err: safeError(err), connection: this.id }, 'sync draft message failed');
        this.close('internal_error');
      },
    );
    this.draftWork.add(settled);
    void settled.then(() => this.draftWork.delete(settled));
  }

  private async draftsSettled(): Promise<void> {
    while (this.draftWork.size > 0) await Promise.all([...this.draftWork]);
  }

  private async hello(message: HelloMessage): Promise<void> {
    if (this.state !== 'hello' || this.userId) return;
    if (this.helloTimer) clearTimeout(this.helloTimer);
    this.helloTimer = null;
    if (message.protocol !== PROTOCOL_VERSION) return this.close('protocol_unsupported', `This server speaks protocol ${PROTOCOL_VERSION}`);
    const claims = await this.hub.services.accessTokens.verify(message.token, this.hub.clock.now());
    if (!claims) return this.close('unauthorized', 'Invalid or expired token');
    const state = await this.hub.services.sessions.state(claims.userId, claims.sessionId);
    if (state === 'revoked') return this.close('unauthorized', 'Session revoked');
    if (state === 'disabled') return this.close('account_disabled', 'Account disabled');
    // This device's own older socket is about to be superseded: it does not count.
    if (this.hub.connectionsOf(claims.userId).filter((c) => c.clientId !== message.client_id).length >= this.hub.maxSocketsPerUser) {
      return this.close('too_many_connections', 'Too many open sync connections');
    }
    this.userId = claims.userId;
    this.sessionId = claims.sessionId;
    this.clientId = message.client_id;
    this.cursor = message.cursor;
    const { services } = this.hub;
    const lastMutationId = await lastMutationIdOf(services, this.userId, this.clientId);
    this.organizationId = (await services.seatOf(this.userId))?.organizationId ?? null;
    const { time_zone: timeZone } = await services.clinicianSettings.get(this.userId);
    if (this.state !== 'hello') return;
    this.state = 'open';
    this.hub.attach(this);
    this.armExpiry(claims.expiresAt);
    const now = this.hub.clock.now();
    this.send({
      type: 'welcome',
      protocol: PROTOCOL_VERSION,
      user_id: this.userId,
      server_time: now.toISOString(),
      last_mutation_id: lastMutationId,
      token_expires_at: claims.expiresAt.toISOString(),
      window: windowOf(now, timeZone),
    });
    this.requestFeed();
  }

  private async reauthenticate(token: string): Promise<void> {
    const claims = await this.hub.services.accessTokens.verify(token, this.hub.clock.now());
    if (!claims || claims.userId !== this.userId) return this.close('unauthorized', 'Invalid token');
    const state = await this.hub.services.sessions.state(claims.userId, claims.sessionId);
    if (state === 'revoked') return this.close('unauthorized', 'Session revoked');
    if (state === 'disabled') return this.close('account_disabled', 'Account disabled');
    this.sessionId = claims.sessionId;
    this.armExpiry(claims.expiresAt);
    this.send({ type: 'auth_ok', token_expires_at: claims.expiresAt.toISOString() });
  }

  private armExpiry(expiresAt: Date): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    const ms = Math.max(0, expiresAt.getTime() - this.hub.clock.now().getTime());
    // setTimeout holds at most ~24.8 days; tokens live minutes.
    this.expiryTimer = setTimeout(() => this.close('unauthorized', 'Token expired'), Math.min(ms, 2 ** 31 - 1));
  }

  /** A revocation, disable or seat change for this user somewhere: is this socket still allowed? */
  async recheck(): Promise<void> {
    if (this.state !== 'open') return;
    const state = await this.hub.services.sessions.state(this.userId, this.sessionId);
    if (state === 'revoked') return this.close('unauthorized', 'Session revoked');
    if (state === 'disabled') return this.close('account_disabled', 'Account disabled');
    const organizationId = (await this.hub.services.seatOf(this.userId))?.organizationId ?? null;
    if (organizationId !== this.organizationId) this.close('scope_changed', 'Organization seat changed');
  }

  // The change feed.

  /** Poke, then pull: runs the feed now, or once more after the run in progress. */
  requestFeed(): void {
    if (this.state !== 'open') return;
    if (this.feedRunning) {
      this.feedAgain = true;
      return;
    }
    this.feedRunning = true;
    void (async () => {
      try {
        do {
          this.feedAgain = false;
          await this.runFeed();
        } while (this.feedAgain && this.state === 'open');
      } catch (err) {
        this.hub.log.error({ err: safeError(err), connection: this.id }, 'sync feed failed');
        this.close('internal_error');
      } finally {
        this.feedRunning = false;
      }
    })();
  }

  private async runFeed(): Promise<void> {
    const result = await this.hub.feed.read(this.userId, this.cursor, this.hub.clock.now());
    if (this.state !== 'open') return;
    if (result.reset) await this.sendAndDrain({ type: 'reset', reason: result.reset });
    const batches = batchesOf(result.changes);
    for (const [i, changes] of batches.entries()) {
      const last = i === batches.length - 1;
      // Each change is serialised once (batchesOf measured it that way); this is the frame of a
      // `changes` message.
      await this.sendAndDrain(
        `{"type":"changes","changes":[${changes.join(',')}],"checkpoint":${JSON.stringify(last ? result.cursor : null)},"more":${!last}}`,
      );
      if (this.state !== 'open') return;
    }
    this.cursor = result.cursor;
    this.send({ type: 'synced', cursor: result.cursor, server_time: this.hub.clock.now().toISOString() });
  }

  // Mutations.

  private device(): MutationDevice {
    return { userId: this.userId, sessionId: this.sessionId, clientId: this.clientId, organizationId: this.organizationId, requestIdPrefix: `sync:${this.id}` };
  }

  private async applyMutations(incoming: MutationMessage[]): Promise<void> {
    const { services, runMutation } = this.hub;
    let batch = incoming;
    if (this.retryingFrom !== null) {
      const resent = batch.findIndex((m) => m.mutation_id <= (this.retryingFrom as number));
      const waiting = resent === -1 ? batch : batch.slice(0, resent);
      for (const m of waiting) this.send({ type: 'retry', mutation_id: m.mutation_id, after_ms: 0 });
      if (resent === -1) return;
      this.retryingFrom = null;
      batch = batch.slice(resent);
    }
    let outcome: BatchOutcome;
    try {
      outcome = await applyMutationBatch(services, runMutation, this.device(), batch, this.hub.log);
    } catch (err) {
      this.hub.log.warn({ err: safeError(err), connection: this.id }, 'sync mutations not applied; device told to retry');
      const after = 1000 + Math.floor(Math.random() * 2000);
      for (const m of batch) this.send({ type: 'retry', mutation_id: m.mutation_id, after_ms: after });
      this.retryingFrom = Math.min(...batch.map((m) => m.mutation_id));
      return;
    }
    if (outcome.kind === 'session') return this.close(outcome.state === 'disabled' ? 'account_disabled' : 'unauthorized', 'Session no longer valid');
    this.retryingFrom = outcome.retryFrom;
    for (const reply of outcome.replies) this.send(reply);
  }
}

/** The changes serialised and cut into batches of at most 500 changes and 1 MiB. */
function batchesOf(changes: Change[]): string[][] {
  const batches: string[][] = [];
  let current: string[] = [];
  let bytes = 0;
  for (const change of changes) {
    const json = JSON.stringify(change);
    const size = Buffer.byteLength(json);
    if (current.length > 0 && (current.length >= BATCH_CHANGES || bytes + size > BATCH_BYTES)) {
      batches.push(current);
      current = [];
      bytes = 0;
    }
    current.push(json);
    bytes += size;
  }
  // The checkpoint travels on the last batch, so a feed with no changes still sends one.
  batches.push(current);
  return batches;
}
