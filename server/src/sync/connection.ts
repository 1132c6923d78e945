/**
 * One device's socket (docs/sync-protocol.md): first-message authentication, in-band token
 * refresh, the change feed from the device's cursor, ordered exactly-once mutations and the
 * draft documents it has open. Framing, ordering and timers only: every database read or
 * write is a hook (hooks.ts).
 */
import { randomUUID } from 'node:crypto';
import secureJson from 'secure-json-parse';
import type { WebSocket } from 'ws';
import {
  CLOSE_CODES,
  SUPPORTED_PROTOCOLS,
  protocolUnsupportedReason,
  clientMessage,
  incomingMutation,
  incomingMutations,
  MUTATIONS_FRAMES_FROM,
  type ClientMessage,
  type CloseCodeName,
  type ServerMessage,
} from '@fieldchart/schema/sync';
import { safeError } from '../log-safety.ts';
import { windowOf, type FeedTable } from '../services/sync/feed.ts';
import type { MutationDevice, MutationMessage } from '../services/sync/mutation-ledger.ts';
import { closeFor, refusalOfSession, type Refusal } from './close-reasons.ts';
import type { DraftPeer } from './drafts.ts';
import { DROPPED_JSON_KEYS, type ConnectionHost, type HeldConnection } from './hooks.ts';
import { answersFrames, FeedFrames } from './feed-frames.ts';
import { SocketQueue } from './socket-queue.ts';

type HelloMessage = Extract<ClientMessage, { type: 'hello' }>;
/**
 * A frame as the queue holds it: mutations not judged yet (each is answered on its own); a
 * `mutations` frame is queued as the mutations it carries.
 */
type Frame = Exclude<ClientMessage, { type: 'mutation' | 'mutations' }> | MutationMessage;

/**
 * A device keeps at most this many mutations unanswered (docs/sync-protocol.md, Limits):
 * 100 on protocols 1 and 2; protocol 3 is told its window (the hub's `upload.inFlight`) in
 * `welcome.max_in_flight`. A transaction applies at most `upload.perTransaction`, half the
 * window: while one batch is applied, the next is already waiting (the device refilled the
 * window with the answers of the one before), so a draining device never leaves the server
 * idle for a round trip, and the fixed cost of a transaction (session check, device row, a
 * lock and a read per kind, commit — each a round trip) is paid over hundreds.
 */
const MUTATIONS_IN_FLIGHT_V1 = 100;
/**
 * A device draining its outbox sends new mutations as the answers of a batch reach it, so the
 * first of them can find the queue empty and would make a batch of its own, and the rest
 * another: two transactions (two commits, the largest fixed cost of a batch) for one window.
 * A short run that starts within GATHER_WINDOW_MS of a batch's answers waits up to GATHER_MS
 * for the mutations those answers make room for. A device that writes one mutation at a time
 * never waits: one answer, one new mutation.
 */
const GATHER_WINDOW_MS = 50;
const GATHER_MS = 3;
const HELLO_TIMEOUT_MS = 10_000;
/**
 * Frames waiting to be handled, as a multiple of the upload window: a device keeps at most
 * that many mutations unanswered plus its draft traffic; more means it ignores the limit.
 */
const WAITING_FRAMES_PER_WINDOW = 2;
/**
 * Bytes of a device's frames held (waiting or being applied) before its socket is read no
 * further until they fall to half: a frame may be 4 MB, and the waiting frames' bound of them would
 * be gigabytes of one device's in the server's memory.
 */
const MAX_HELD_BYTES = 64 * 1024 * 1024;
/** Bytes queued towards a device before it counts as not reading. */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;
/**
 * While the device uploads, feed runs wait this long after its latest mutation batch: a
 * backlog of 10k comes in a hundred batches, and one run after the burst sends the same rows
 * as a run after each batch, without re-reading the growing scope a hundred times.
 */
const FEED_COALESCE_MS = 15;
/** …but never longer than this, so other writers' changes still reach an uploading device. */
const FEED_MAX_DEFER_MS = 500;
type Answer = Extract<ServerMessage, { type: 'ack' | 'reject' | 'retry' | 'failed' | 'conflict' }>;

const isDraftFrame = (f: Frame) => f.type === 'doc_open' || f.type === 'doc' || f.type === 'doc_close';
const typeOf = (json: unknown): unknown => (typeof json === 'object' && json !== null ? (json as { type?: unknown }).type : undefined);

export class SyncConnection implements DraftPeer, HeldConnection {
  readonly id = randomUUID();
  userId = '';
  clientId = '';
  private sessionId = '';
  /** The seat the socket was opened under: a different one closes it (4410). */
  private organizationId: string | null = null;
  /** The protocol version this socket speaks (its hello), which decides protocol 2 fields. */
  protocol = 1;
  /** Mutations this device may keep unanswered: its protocol's window. */
  private maxInFlight = MUTATIONS_IN_FLIGHT_V1;
  private state: 'hello' | 'open' | 'closed' = 'hello';
  private cursor: string | null = null;
  /** The clinician's time zone as last read: the feed computes its window from it first. */
  private timeZone: string | undefined;
  private readonly queue: SocketQueue<Frame>;
  /** Each waiting frame's size on the wire (SocketQueue `bytes`). */
  private readonly frameBytes = new WeakMap<Frame, number>();
  get queueDepth(): number {
    return this.queue.depth;
  }
  private feedRunning = false;
  private feedAgain = false;
  /** What the next feed run owes: every table, or only these poked tables (which may be read alone). */
  private feedOwed: Set<FeedTable> | 'all' = 'all';
  /**
   * Each poked table's snapshot as its last table diff read it (feed.ts `streamTable`): the
   * cursor has not moved for those reads. Emptied by every full run, whose cursor covers them.
   */
  private readonly tableSince = new Map<FeedTable, string>();
  /** acked_through as the last full run read it: a table diff's `synced` repeats it. */
  private ackedThrough: number | null = null;
  /** Bytes of feed frames handed to the socket and not yet written. */
  private feedBytesQueued = 0;
  /** A mutation batch is being applied (its own pokes arrive meanwhile). */
  private applying = false;
  private lastBatchAt = 0;
  /** Mutations received, and answered: the device's unanswered ones are the difference. */
  private mutationsReceived = 0;
  private mutationsAnswered = 0;
  /** Mutations the last batch answered, and received since: a draining device replaces the first with the second. */
  private lastAnswered = 0;
  private receivedSinceAnswer = 0;
  /** A feed run is owed and waits for the upload burst to pause (FEED_COALESCE_MS). */
  private feedTimer: NodeJS.Timeout | null = null;
  private feedOwedSince = 0;
  /**
   * Set when a mutation was answered `retry`: the frames behind it are already on the wire,
   * and applying them would move last_mutation_id past the one the device will resend. They
   * are answered `retry` too until the device resends from that id.
   */
  private retryingFrom: number | null = null;
  private helloReceived = false;
  /** The protocol the device's hello said, known on arrival (`protocol` is set once hello is handled). */
  private saidProtocol = 0;
  private helloTimer: NodeJS.Timeout | null;
  private expiryTimer: NodeJS.Timeout | null = null;
  /** Answered the last ping (the hub pings every socket on one timer: `heartbeat`). */
  private alive = true;

  constructor(
    private readonly socket: WebSocket,
    private readonly host: ConnectionHost,
  ) {
    this.queue = new SocketQueue<Frame>({
      capacity: WAITING_FRAMES_PER_WINDOW * host.upload.inFlight,
      maxBatch: host.upload.perTransaction,
      alongside: isDraftFrame,
      batch: (f) => f.type === 'mutation',
      expect: (run) => this.expectedMutations(run),
      handle: (frames) => this.handle(frames),
      bytes: {
        max: MAX_HELD_BYTES,
        weigh: (f) => this.frameBytes.get(f) ?? 0,
        pressure: (on) => (on ? this.socket.pause() : this.socket.resume()),
      },
      onError: (err) => {
        this.host.log.error({ err: safeError(err), connection: this.id }, 'sync connection failed');
        this.close('internal_error');
      },
    });
    this.helloTimer = setTimeout(() => this.close('auth_timeout', 'No hello within 10 s'), HELLO_TIMEOUT_MS);
    socket.on('pong', () => (this.alive = true));
    socket.on('message', (data, isBinary) => this.onFrame(data, isBinary));
    socket.on('close', () => this.onClosed());
    socket.on('error', () => this.onClosed());
  }

  /**
   * A phone that drops off a network sends no FIN: without pings its socket (and its place in
   * the per-user limit) would linger until TCP gives up, minutes later. A socket that did not
   * answer the previous ping is dropped.
   */
  heartbeat(): void {
    // A socket this server stopped reading (SocketQueue `bytes`) cannot have read the pong: it
    // is judged again only a full interval after reading resumes.
    if (this.socket.isPaused) return void (this.alive = true);
    if (!this.alive) return void this.socket.terminate();
    this.alive = false;
    this.socket.ping();
  }

  get isOpen(): boolean {
    return this.state === 'open';
  }

  send(message: ServerMessage): void {
    this.sendText(JSON.stringify(message));
  }

  private sendText(text: string): void {
    if (this.socket.readyState !== this.socket.OPEN) return;
    // A device that stops reading (or reads slower than it is sent to) is dropped rather than
    // buffered without bound; it resumes from its cursor when it reconnects.
    // The feed run's own frames do not count: they are as many bytes as one read holds, and the
    // run waits for them (an ack sent during a big first sync is not a device that stopped reading).
    if (this.socket.bufferedAmount - this.feedBytesQueued > MAX_BUFFERED_BYTES) return void this.socket.terminate();
    this.socket.send(text);
  }

  /** A batch's answers, in order: from protocol 4 gathered into `answers` frames (cut as `changes` are), one frame each before. */
  private answer(replies: readonly Answer[]): void {
    if (this.protocol >= 4) return answersFrames(replies, (frame) => this.sendText(frame));
    for (const reply of replies) this.send(reply);
  }

  /** A frame of a feed run, sent at once; resolves once it is handed to the OS. */
  private sendFeedFrame(frame: string): Promise<void> {
    return new Promise((resolve) => {
      if (this.state !== 'open' || this.socket.readyState !== this.socket.OPEN) return resolve();
      // Encoded here rather than by ws (which would encode a string the same way), so its size is known.
      const data = Buffer.from(frame);
      this.feedBytesQueued += data.length;
      this.socket.send(data, { binary: false }, () => {
        this.feedBytesQueued -= data.length;
        resolve();
      });
    });
  }

  close(reason: CloseCodeName, text = ''): void {
    if (this.state === 'closed') return;
    this.onClosed();
    this.socket.close(CLOSE_CODES[reason], text.slice(0, 120));
  }

  private refuse(refusal: Refusal): void {
    const { code, text } = closeFor(refusal);
    this.close(code, text);
  }

  private onClosed(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.queue.stop();
    if (this.helloTimer) clearTimeout(this.helloTimer);
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    if (this.feedTimer) clearTimeout(this.feedTimer);
    this.host.detach(this);
  }

  private onFrame(data: unknown, isBinary: boolean): void {
    if (this.state === 'closed') return;
    let messages: Frame[] | null = null;
    let together = false;
    if (!isBinary) {
      try {
        // The keys HTTP drops, by the same parser: it scans only a text that holds one, so a
        // frame costs about a plain parse.
        const json: unknown = secureJson.parse(String(data), null, DROPPED_JSON_KEYS);
        // A mutation with a valid id is answered whatever else is wrong with it (an unknown
        // name, bad arguments): closing the socket would only make the device resend it. Its
        // envelope is judged once, by the ledger, which answers a fault as its reject.
        const type = typeOf(json);
        if (type === 'mutations') {
          together = true;
          const parsed = incomingMutations.safeParse(json);
          messages = parsed.success ? parsed.data.mutations : null;
        } else {
          const parsed = type === 'mutation' ? incomingMutation.safeParse(json) : clientMessage.safeParse(json);
          messages = parsed.success && parsed.data.type !== 'mutations' ? [parsed.data] : null;
        }
      } catch {
        messages = null;
      }
    }
    const [first] = messages ?? [];
    if (!messages || !first) return this.close('bad_message', 'Not a valid sync message');
    // Decided on arrival, not on the state: frames may follow hello before welcome is sent (they
    // wait in the queue), and a second hello must never reach hello() — it would swap the
    // socket's identity after the first was checked.
    if (!this.helloReceived && first.type !== 'hello') return this.close('bad_message', 'The first message must be hello');
    if (this.helloReceived && first.type === 'hello') return this.close('bad_message', 'hello was already received');
    if (first.type === 'hello') this.saidProtocol = first.protocol;
    if (together && this.saidProtocol < MUTATIONS_FRAMES_FROM) return this.close('bad_message', `mutations frames need protocol ${MUTATIONS_FRAMES_FROM}`);
    this.helloReceived = true;
    // ws hands a message over as one Buffer (binaryType 'nodebuffer', its default); a frame's
    // mutations share its size.
    const bytes = Buffer.isBuffer(data) ? Math.ceil(data.length / messages.length) : 0;
    for (const message of messages) {
      if (message.type === 'mutation') {
        this.mutationsReceived++;
        this.receivedSinceAnswer++;
      }
      this.frameBytes.set(message, bytes);
      if (!this.queue.push(message)) return this.close('bad_message', 'Too many messages waiting; wait for answers');
    }
  }

  /** One frame, or a run of consecutive mutations (one transaction), from the queue. */
  private async handle(frames: Frame[]): Promise<void> {
    if (this.state === 'closed') return;
    const [first] = frames;
    if (!first) return;
    const { drafts } = this.host.hooks;
    switch (first.type) {
      case 'mutation':
        return this.applyMutations(frames as MutationMessage[]);
      case 'hello':
        return this.hello(first);
      case 'auth':
        return this.reauthenticate(first.token);
      case 'doc_open':
        return drafts.open(this, first.doc);
      case 'doc':
        return drafts.receive(this, first.doc, first.message);
      case 'doc_close':
        return drafts.close(this, first.doc);
    }
  }

  private async hello(message: HelloMessage): Promise<void> {
    if (this.state !== 'hello' || this.userId) return;
    if (this.helloTimer) clearTimeout(this.helloTimer);
    this.helloTimer = null;
    if (!SUPPORTED_PROTOCOLS.includes(message.protocol)) {
      return this.close('protocol_unsupported', protocolUnsupportedReason());
    }
    this.protocol = message.protocol;
    this.maxInFlight = message.protocol >= 3 ? this.host.upload.inFlight : MUTATIONS_IN_FLIGHT_V1;
    const answer = await this.host.hooks.authenticate(message.token, message.client_id);
    if (!answer.ok) return this.refuse(answer.refusal);
    const { identity } = answer;
    if (!this.host.hasRoomFor(identity.userId, message.client_id)) return this.close('too_many_connections', 'Too many open sync connections');
    if (this.state !== 'hello') return;
    const standing = await this.host.hooks.admit(identity, message.client_id, message.cursor !== null);
    if (standing) return this.refuse(standing);
    if (this.state !== 'hello') return;
    this.userId = identity.userId;
    this.sessionId = identity.sessionId;
    this.clientId = message.client_id;
    this.cursor = message.cursor;
    this.organizationId = identity.organizationId;
    this.timeZone = identity.timeZone;
    this.state = 'open';
    this.host.attach(this);
    this.armExpiry(identity.expiresAt);
    const now = this.host.now();
    this.send({
      type: 'welcome',
      protocol: message.protocol,
      user_id: this.userId,
      server_time: now.toISOString(),
      last_mutation_id: identity.lastMutationId,
      token_expires_at: identity.expiresAt.toISOString(),
      window: windowOf(now, identity.timeZone),
      ...(message.protocol >= 3 ? { max_in_flight: this.maxInFlight } : {}),
    });
    this.requestFeed();
  }

  private async reauthenticate(token: string): Promise<void> {
    const answer = await this.host.hooks.authenticate(token, this.clientId);
    if (!answer.ok) return this.refuse(answer.refusal);
    // The new token must name the same user.
    if (answer.identity.userId !== this.userId) return this.refuse('invalid_token');
    this.sessionId = answer.identity.sessionId;
    this.armExpiry(answer.identity.expiresAt);
    this.send({ type: 'auth_ok', token_expires_at: answer.identity.expiresAt.toISOString() });
  }

  private armExpiry(expiresAt: Date): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    const ms = Math.max(0, expiresAt.getTime() - this.host.now().getTime());
    // setTimeout holds at most ~24.8 days; tokens live minutes.
    this.expiryTimer = setTimeout(() => this.refuse('token_expired'), Math.min(ms, 2 ** 31 - 1));
  }

  /** A revocation, disable or seat change for this user somewhere: is this socket still allowed? */
  async recheck(): Promise<void> {
    if (this.state !== 'open') return;
    const { refusal, organizationId } = await this.host.hooks.scope(this.userId, this.sessionId, this.clientId);
    if (refusal) return this.refuse(refusal);
    if (organizationId !== this.organizationId) this.refuse('seat_changed');
  }

  // The change feed.

  /**
   * Poke, then pull: runs the feed now, or once more after the run in progress. `table`: the
   * poke named its table; while only named tables are owed, the run reads those alone.
   */
  requestFeed(table: FeedTable | null = null): void {
    if (this.state !== 'open') return;
    if (table === null) this.feedOwed = 'all';
    else if (this.feedOwed !== 'all') this.feedOwed.add(table);
    this.startFeed();
  }

  private startFeed(): void {
    if (this.state !== 'open') return;
    if (this.deferFeed()) return;
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
        this.host.log.error({ err: safeError(err), connection: this.id }, 'sync feed failed');
        this.close('internal_error');
      } finally {
        this.feedRunning = false;
      }
    })();
  }

  /** During an upload burst: owe the run, and make it once the burst pauses (or at the bound). */
  private deferFeed(): boolean {
    const now = Date.now();
    const uploading = this.applying || this.queue.depth > 0 || performance.now() - this.lastBatchAt < FEED_COALESCE_MS;
    if (!uploading) return false;
    if (this.feedOwedSince === 0) this.feedOwedSince = now;
    if (now - this.feedOwedSince >= FEED_MAX_DEFER_MS) return false;
    if (this.feedTimer === null) {
      this.feedTimer = setTimeout(() => {
        this.feedTimer = null;
        this.startFeed();
      }, FEED_COALESCE_MS);
    }
    return true;
  }

  private async runFeed(): Promise<void> {
    this.feedOwedSince = 0;
    if (this.feedTimer !== null) clearTimeout(this.feedTimer);
    this.feedTimer = null;
    // A transaction's pokes (one per table it wrote) arrive together and are handled in one
    // turn: the run starts after them, so it owes them all.
    await undefined;
    const owed = this.feedOwed;
    this.feedOwed = new Set();
    if (owed !== 'all' && owed.size === 0) return;
    if (owed !== 'all' && (await this.runTableFeed([...owed]))) return;
    // Frames go out as the feed builds them; the last (with the checkpoint) is awaited until it
    // is handed to the OS, and with it every frame before it. A slow device's frames wait in
    // the socket's buffer meanwhile: as many bytes as one read held in memory before streaming.
    const frames = new FeedFrames((frame) => void this.sendFeedFrame(frame));
    // Protocol 2: the device learns which of its mutations this snapshot reflects.
    const result = await this.host.hooks.feed(
      this.userId,
      this.cursor,
      this.host.now(),
      { timeZone: this.timeZone, ...(this.protocol >= 2 ? { clientId: this.clientId } : {}) },
      { reset: (reason) => void this.sendFeedFrame(JSON.stringify({ type: 'reset', reason } satisfies ServerMessage)), change: (json) => frames.add(json) },
    );
    this.timeZone = result.timeZone;
    if (this.state !== 'open') return;
    await this.sendFeedFrame(frames.last(result.cursor));
    if (this.state !== 'open') return;
    this.cursor = result.cursor;
    this.tableSince.clear();
    this.ackedThrough = result.ackedThrough;
    this.sendSynced(result.cursor);
  }

  /** The end of a feed run: the cursor, and on protocol 2 through which mutation the rows have come (the last full run's). */
  private sendSynced(cursor: string): void {
    this.send({ type: 'synced', cursor, server_time: this.host.now().toISOString(), ...(this.ackedThrough !== null ? { acked_through: this.ackedThrough } : {}) });
  }

  /**
   * The poked tables' changes alone, the cursor unchanged; false when only the full diff can
   * answer (no cursor yet, or feed.ts `streamTable` declined), with nothing sent.
   */
  private async runTableFeed(tables: readonly FeedTable[]): Promise<boolean> {
    // A socket's first run is full (`feedOwed` starts as every table): the cursor and, on
    // protocol 2, the acked_through a table diff repeats are that run's.
    const cursor = this.cursor;
    if (cursor === null) return false;
    const frames = new FeedFrames((frame) => void this.sendFeedFrame(frame));
    const options = { timeZone: this.timeZone, ...(this.ackedThrough !== null ? { clientId: this.clientId, ackedThrough: this.ackedThrough } : {}) };
    // From where the tables were last read together; else from the cursor (rows may come again).
    const since = tables.map((t) => this.tableSince.get(t) ?? null);
    const from = since.every((s) => s === since[0]) ? (since[0] ?? null) : null;
    const end = await this.host.hooks.feedTable(this.userId, tables, cursor, from, this.host.now(), options, { change: (json) => frames.add(json) });
    if (!end) return false;
    if (this.state !== 'open') return true;
    await this.sendFeedFrame(frames.last(cursor));
    if (this.state !== 'open') return true;
    for (const table of tables) this.tableSince.set(table, end.snapshot);
    this.sendSynced(cursor);
    return true;
  }

  // Mutations.

  private device(): MutationDevice {
    return { userId: this.userId, sessionId: this.sessionId, clientId: this.clientId, organizationId: this.organizationId, requestIdPrefix: `sync:${this.id}`, protocol: this.protocol };
  }

  private answered(count: number): void {
    this.mutationsAnswered += count;
    this.lastAnswered = count;
    this.receivedSinceAnswer = 0;
  }

  /** A short run is about to be applied: the mutations the last answers made room for that are still on their way. */
  private expectedMutations(run: number): { frames: number; withinMs: number } {
    const coming = this.lastAnswered - this.receivedSinceAnswer;
    const room = this.maxInFlight - (this.mutationsReceived - this.mutationsAnswered);
    if (coming <= 0 || room <= 0 || run >= this.maxInFlight || performance.now() - this.lastBatchAt > GATHER_WINDOW_MS) return { frames: 0, withinMs: 0 };
    return { frames: Math.min(coming, room), withinMs: GATHER_MS };
  }

  private async applyMutations(incoming: MutationMessage[]): Promise<void> {
    let batch = incoming;
    if (this.retryingFrom !== null) {
      const resent = batch.findIndex((m) => m.mutation_id <= (this.retryingFrom as number));
      const waiting = resent === -1 ? batch : batch.slice(0, resent);
      this.answer(waiting.map((m) => ({ type: 'retry', mutation_id: m.mutation_id, after_ms: 0 })));
      this.answered(waiting.length);
      if (resent === -1) return;
      this.retryingFrom = null;
      batch = batch.slice(resent);
    }
    let outcome;
    this.applying = true;
    try {
      outcome = await this.host.hooks.applyMutations(this.device(), batch);
    } catch (err) {
      this.host.log.warn({ err: safeError(err), connection: this.id }, 'sync mutations not applied; device told to retry');
      const after = 1000 + Math.floor(Math.random() * 2000);
      this.answer(batch.map((m) => ({ type: 'retry', mutation_id: m.mutation_id, after_ms: after })));
      this.answered(batch.length);
      this.retryingFrom = Math.min(...batch.map((m) => m.mutation_id));
      return;
    } finally {
      this.applying = false;
      this.lastBatchAt = performance.now();
    }
    if (outcome.kind === 'session') return this.refuse(refusalOfSession(outcome.state) ?? 'session_revoked');
    if (outcome.kind === 'device_revoked') return this.refuse('device_revoked');
    this.retryingFrom = outcome.retryFrom;
    this.answer(outcome.replies);
    this.answered(outcome.replies.length);
    // Protocol 2: a `synced` whose acked_through covers this batch follows its acks, also when
    // the mutations changed no row (no notification would run the feed then).
    if (this.protocol >= 2) this.requestFeed();
  }
}
