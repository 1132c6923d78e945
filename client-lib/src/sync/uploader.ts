/**
 * The uploader: drains the outbox in order through one carrier at a time — the socket, or
 * `POST /sync/mutations` while websockets cannot be opened (carriers.ts) — and is the one
 * place that acts on the server's answers: `ack`, `reject`, `failed`, `retry` and `conflict`.
 *
 * - At most the carrier's window of entries is unanswered (the socket's `welcome.max_in_flight`,
 *   else DEFAULT_WINDOW); a `retry` rewinds to the retried entry and
 *   pauses (backoff with jitter, at least the server's hint); a transport failure likewise.
 * - After `welcome`, entries the server may already have processed (ids up to its
 *   `last_mutation_id`) are sent first and answered before anything newer goes: were another
 *   install using this client id, newer entries must not be applied ahead of them.
 * - `conflict` (another install used this client id): nothing more is sent; once every entry
 *   in flight is answered, the outbox is re-keyed (a new client id, unanswered entries
 *   renumbered) and the engine reconnects under it. A lost socket meanwhile leaves the old id:
 *   the server answers again on the next one.
 */
import type { MutationName, ServerMessage } from '@fieldchart/schema/sync';
import { failureCode } from '../storage/storage-errors.ts';
import type { LocalDb } from '../storage/local-db.ts';
import {
  ackEntries,
  failureCount,
  parkEntry,
  pendingCount,
  pendingEntries,
  recordAttempt,
  rejectEntry,
  rekeyOutbox,
  type OutboxEntry,
} from '../storage/outbox.ts';
import { Backoff, type BackoffOptions } from './backoff.ts';
import type { DraftSync } from './drafts.ts';
import type { Emitter } from './emitter.ts';
import type { SyncEvents } from './events.ts';
import type { StatusStore } from './status.ts';

/**
 * Mutations sent and not yet answered, at most, where the server names no window: protocols 1
 * and 2, and `POST /sync/mutations` (100 per request).
 */
export const DEFAULT_WINDOW = 100;

/**
 * How long a send still waiting for its answers may go on once its carrier is let go (a socket
 * opened while a `POST /sync/mutations` was out). One send runs at a time, so an exchange hung
 * on the network held the socket that replaced it until the REST timeout (30 s). A healthy one
 * answers well within this; an abandoned one's mutations go again on the socket, where the
 * server answers what it had applied as a replay.
 */
export const LET_GO_GRACE_MS = 5_000;

/** A send in progress, and the timer that abandons it once its carrier is let go. */
type Sending = { readonly abort: AbortController; letGo: ReturnType<typeof setTimeout> | null };

/** The server's answer to one mutation, on either carrier. */
export type Answer = Extract<ServerMessage, { type: 'ack' | 'reject' | 'retry' | 'failed' | 'conflict' }>;

export interface OutgoingMutation {
  readonly mutation_id: number;
  readonly name: MutationName;
  readonly args: Record<string, unknown>;
  readonly client_time: string;
}

/** How mutations reach the server. */
export interface Carrier {
  /** Bytes of arguments one `send` may carry (a request body limit); the socket has none. */
  readonly batchBytes: number;
  /** Mutations that may be unanswered at once on this carrier. */
  readonly window: number;
  /**
   * Sends in order. Answers how many went out, and the answers that came back with them (the
   * socket's come later, through {@link Uploader.answer}). Throws when the transport failed:
   * then none of the batch counts as sent. `signal` aborts an exchange still waiting for its
   * answers once the carrier is let go.
   */
  send(batch: readonly OutgoingMutation[], signal: AbortSignal): Promise<{ sent: number; answers: readonly Answer[] }>;
  /**
   * For an ack on this carrier: the `synced` count after which the feed surely has the entry's
   * rows, or null when the next socket's first `synced` settles it (an `acked_through` that
   * covers it, protocol 2, settles it sooner).
   */
  settleAfter(duplicate: boolean): number | null;
}

export interface UploaderOptions {
  readonly db: LocalDb;
  readonly drafts: DraftSync;
  readonly status: StatusStore;
  readonly events: Emitter<SyncEvents>;
  readonly backoff?: BackoffOptions;
  /** An answer was applied: settle what it allows and wake whoever waits for the device to be synced. */
  onAnswered(): Promise<void>;
  /** The outbox has a new client id; the carrier in use was let go (a socket says hello under the old one). */
  onRekeyed(): void;
}

export class Uploader {
  private carrier: Carrier | null = null;
  private readonly inflight = new Set<number>();
  /** The highest id sent on this carrier; the next send starts after it. */
  private lastSentId = 0;
  /** Ids the server may have processed already (its `last_mutation_id`): answered before newer ones go. */
  private probeThrough = 0;
  /** Entries answered `conflict`, while the answers of the others in flight are awaited. */
  private readonly conflicted = new Set<number>();
  /**
   * Re-key once the server has answered every id it may have processed (the socket's probe):
   * another install took this client id's socket (4409), so the two must part ids before
   * anything newer is sent under the shared one.
   */
  private rekeyWhenProbed = false;
  private pumping = false;
  private pumpAgain = false;
  private pausedUntil = 0;
  private pauseTimer: ReturnType<typeof setTimeout> | null = null;
  /** The send in progress: one at a time. */
  private sending: Sending | null = null;
  /**
   * Rewinds so far (a `retry`, a new carrier): a send being prepared when one happens read the
   * outbox from before it, and does not go — the rewound entries go first, in order.
   */
  private rewinds = 0;
  private readonly backoff: Backoff;

  constructor(private readonly opts: UploaderOptions) {
    this.backoff = new Backoff(opts.backoff);
  }

  /**
   * Uploads through `carrier` from now on; `processedThrough`: the server's last processed id,
   * if known. `rekey`: take a new client id as soon as those are answered (a superseded socket).
   */
  attach(carrier: Carrier, processedThrough = 0, options: { rekey?: boolean } = {}): void {
    this.reset(LET_GO_GRACE_MS);
    this.carrier = carrier;
    this.probeThrough = processedThrough;
    this.rekeyWhenProbed = options.rekey === true;
    void this.pump();
  }

  /**
   * Stops using `carrier` (or any, and a send still out is abandoned at once): what was in flight
   * is unanswered and goes again on the next.
   */
  detach(carrier?: Carrier): void {
    if (carrier && this.carrier !== carrier) return;
    this.carrier = null;
    this.reset(carrier ? LET_GO_GRACE_MS : 0);
    this.opts.status.patch({ uploading: false });
  }

  isUsing(carrier: Carrier): boolean {
    return this.carrier === carrier;
  }

  /** Sends pending entries in order, up to the carrier's window unanswered. One runner at a time. */
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
      this.opts.status.fail(failureCode(err, 'upload'), err instanceof Error ? err.message : String(err));
      // The outbox could not be read (a full storage, say): try again later, or nothing would.
      this.pause(this.backoff.next());
    } finally {
      this.pumping = false;
    }
  }

  /**
   * The one handler of the server's answers, whichever carrier brought them (an answer's own
   * frame, protocol 4's `answers` frame, an HTTP response), in the order the server gave them:
   * each run of acknowledgements in one local transaction, then the counts, the waiters and the
   * next sends once for all.
   */
  async answerAll(answers: readonly Answer[], from: Carrier | null = this.carrier): Promise<void> {
    const current = from !== null && from === this.carrier;
    for (let i = 0; i < answers.length; ) {
      let end = i;
      while (answers[end]?.type === 'ack') end++;
      if (end > i) {
        await this.acked(answers.slice(i, end) as Array<Extract<Answer, { type: 'ack' }>>, from, current);
        i = end;
      } else {
        await this.answerOne(answers[i] as Exclude<Answer, { type: 'ack' }>, current);
        i++;
      }
    }
    if (current && this.conflicted.size > 0 && this.inflight.size === 0) await this.rekey();
    await this.updateCounts();
    await this.opts.onAnswered();
    void this.pump();
  }

  private async acked(acks: ReadonlyArray<Extract<Answer, { type: 'ack' }>>, from: Carrier | null, current: boolean): Promise<void> {
    const { db, events } = this.opts;
    if (current) for (const a of acks) this.inflight.delete(a.mutation_id);
    const duplicate = (a: Extract<Answer, { type: 'ack' }>) => (a.result as { duplicate?: unknown } | null | undefined)?.duplicate === true;
    const acked = await ackEntries(
      db,
      acks.map((a) => ({ mutationId: a.mutation_id, result: a.result, settleAfter: from?.settleAfter(duplicate(a)) ?? null })),
      new Date().toISOString(),
    );
    this.backoff.reset();
    if (acked.length === 0) return;
    for (const { entry, ack } of acked) events.emit('ack', { mutationId: entry.mutation_id, name: entry.name, scheduleUuid: entry.schedule_uuid, result: ack.result });
    events.emit('change', { reason: 'ack' });
    if (acked.some(({ entry }) => entry.name === 'visit.schedule' || entry.name === 'patient.create')) this.opts.drafts.retryUnavailable();
  }

  private async answerOne(a: Exclude<Answer, { type: 'ack' }>, current: boolean): Promise<void> {
    const { db, status, events } = this.opts;
    const wasInFlight = current && this.inflight.delete(a.mutation_id);
    const at = new Date().toISOString();
    switch (a.type) {
      case 'reject': {
        const rejection = await rejectEntry(db, a, at);
        if (rejection) {
          status.fail('rejected', `${rejection.name} (mutation ${rejection.mutationId}): ${rejection.code}`);
          events.emit('rejection', rejection);
          events.emit('change', { reason: 'reject' });
        }
        break;
      }
      case 'failed': {
        const failure = await parkEntry(db, a, at);
        if (failure) {
          status.fail('failed', `${failure.name} (mutation ${failure.mutationId}): ${failure.code}`);
          events.emit('failure', failure);
          events.emit('change', { reason: 'reject' });
        }
        break;
      }
      case 'retry': {
        // Not processed: it and everything sent after it go again, in order, after a pause.
        if (!wasInFlight) break;
        await recordAttempt(db, a.mutation_id, `retry after ${a.after_ms} ms`);
        for (const id of [...this.inflight]) if (id >= a.mutation_id) this.inflight.delete(id);
        this.lastSentId = Math.min(this.lastSentId, a.mutation_id - 1);
        this.rewinds++;
        status.fail('retry', `the server asked to retry mutation ${a.mutation_id}`);
        this.pause(this.backoff.next(a.after_ms));
        break;
      }
      case 'conflict': {
        if (!current) break; // a carrier let go: its entries go again on the next and are answered there
        this.conflicted.add(a.mutation_id);
        status.fail('client_id_reused', `mutation ${a.mutation_id}: another install uses this client id`);
        break;
      }
    }
  }

  private async pumpOnce(): Promise<void> {
    const carrier = this.carrier;
    if (!carrier || this.conflicted.size > 0 || Date.now() < this.pausedUntil) return;
    const room = carrier.window - this.inflight.size;
    if (room <= 0) return;
    if (this.rekeyWhenProbed && this.probeThrough === 0 && this.inflight.size === 0) return this.rekey('superseded');
    const rewinds = this.rewinds;
    let entries = await pendingEntries(this.opts.db, this.lastSentId, room);
    if (this.probeThrough > 0) {
      const probe = this.probeThrough;
      if (entries[0] && entries[0].mutation_id <= probe) entries = entries.filter((e) => e.mutation_id <= probe);
      else if ([...this.inflight].some((id) => id <= probe)) return;
      else {
        this.probeThrough = 0;
        if (this.rekeyWhenProbed) return this.rekey('superseded');
      }
    }
    const batch: OutgoingMutation[] = [];
    let bytes = 0;
    for (const e of entries) {
      const args = await this.argsOf(e);
      if (args === null || this.carrier !== carrier) break;
      bytes += new TextEncoder().encode(JSON.stringify(args)).length + 200;
      if (batch.length > 0 && bytes > carrier.batchBytes) break;
      batch.push({ mutation_id: e.mutation_id, name: e.name, args, client_time: e.client_time });
    }
    // Answers came while the outbox was read: a rewind (its pause ends in a pump) or a new carrier.
    if (batch.length === 0 || this.carrier !== carrier || this.rewinds !== rewinds) return;
    for (const m of batch) this.inflight.add(m.mutation_id);
    this.lastSentId = (batch.at(-1) as OutgoingMutation).mutation_id;
    this.opts.status.patch({ uploading: true });
    let outcome: Awaited<ReturnType<Carrier['send']>>;
    const sending: Sending = { abort: new AbortController(), letGo: null };
    this.sending = sending;
    try {
      outcome = await carrier.send(batch, sending.abort.signal);
    } catch (err) {
      if (this.carrier === carrier) {
        this.unsend(batch);
        // Nothing of it is out now: the app is not shown an upload while the device waits to try again.
        this.opts.status.patch({ uploading: this.inflight.size > 0 });
        this.opts.status.fail(failureCode(err, 'upload'), err instanceof Error ? err.message : String(err));
        this.pause(this.backoff.next());
      }
      return;
    } finally {
      if (sending.letGo) clearTimeout(sending.letGo);
      if (this.sending === sending) this.sending = null;
    }
    if (outcome.sent < batch.length && this.carrier === carrier) this.unsend(batch.slice(outcome.sent));
    if (outcome.answers.length > 0) await this.answerAll(outcome.answers, carrier);
    // A carrier that answers at once (HTTP) left nothing in flight: what it did not answer goes again.
    if (outcome.answers.length > 0 && this.carrier === carrier) this.unsend(batch.filter((m) => this.inflight.has(m.mutation_id)));
    this.opts.status.patch({ uploading: this.inflight.size > 0 });
  }

  /**
   * A mutation's arguments as sent. A note takes its sections from the server's copy of the
   * draft, which must have the device's edits first: null while it waits for them (the
   * mutations behind it wait too), or the device's own texts once waiting has lasted too long.
   */
  private async argsOf(e: OutboxEntry): Promise<Record<string, unknown> | null> {
    if (e.name !== 'note.submit' || typeof e.args.schedule_uuid !== 'string') return e.args;
    const ready = await this.opts.drafts.prepareForSubmit(e.args.schedule_uuid);
    if (ready.kind === 'wait') return null;
    return ready.kind === 'sections' ? { ...ready.sections, ...e.args } : e.args;
  }

  private unsend(batch: readonly OutgoingMutation[]): void {
    for (const m of batch) this.inflight.delete(m.mutation_id);
    const first = batch[0];
    if (first) this.lastSentId = Math.min(this.lastSentId, first.mutation_id - 1);
  }

  /**
   * Another install holds this client id (it answered `conflict`, or took the socket): a new
   * id, the unanswered entries renumbered under it.
   */
  private async rekey(why: 'client_id_reused' | 'superseded' = 'client_id_reused'): Promise<void> {
    this.carrier = null;
    this.reset();
    const { renumbered } = await rekeyOutbox(this.opts.db);
    this.opts.status.fail(
      'client_id_reused',
      why === 'superseded'
        ? `another install connected with this device's client id: a new one taken, ${renumbered} write(s) go under it`
        : `another install used this device's client id: ${renumbered} write(s) go again under a new one`,
    );
    this.opts.onRekeyed();
  }

  private pause(ms: number): void {
    if (this.pauseTimer) clearTimeout(this.pauseTimer);
    this.pausedUntil = Date.now() + ms;
    this.pauseTimer = setTimeout(() => {
      this.pauseTimer = null;
      // Timers may fire a little before Date.now() says the pause is over.
      this.pausedUntil = 0;
      void this.pump();
    }, ms);
  }

  /** `letGoAfterMs`: how long a send still out may go on (0: abandoned now). */
  private reset(letGoAfterMs = 0): void {
    this.rewinds++;
    this.rekeyWhenProbed = false;
    this.inflight.clear();
    this.conflicted.clear();
    this.lastSentId = 0;
    this.probeThrough = 0;
    this.pausedUntil = 0;
    if (this.pauseTimer) clearTimeout(this.pauseTimer);
    this.pauseTimer = null;
    const sending = this.sending;
    if (sending && letGoAfterMs === 0) {
      if (sending.letGo) clearTimeout(sending.letGo);
      sending.abort.abort();
    } else if (sending && !sending.letGo) sending.letGo = setTimeout(() => sending.abort.abort(), letGoAfterMs);
  }

  private async updateCounts(): Promise<void> {
    const db = this.opts.db;
    this.opts.status.patch({ pending: await pendingCount(db), failed: await failureCount(db), uploading: this.inflight.size > 0 });
  }
}
