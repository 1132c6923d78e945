/**
 * Applies a device's mutations in order, exactly once (docs/sync-protocol.md, Mutations): one
 * transaction per batch, each mutation in its own savepoint through the REST services, the
 * device's last applied id advanced in the same transaction. Shared by the socket and the
 * REST fallback (`POST /sync/mutations`).
 *
 * One mutation's failure is its own: whatever goes wrong inside a mutation's savepoint — a
 * refusal of the rules, arguments the contract does not accept, a value the database refuses
 * (SQLSTATE class 22), a bug — rolls back that savepoint only, and the mutations before and
 * after it are applied as usual. Only a failure of the batch's transaction itself (connection
 * lost, serialization failure, commit failure) throws out of here, and is a `retry`.
 *
 * Runs of queued timer events, mileage and patient creates go set-based (mutation-sets.ts)
 * without a savepoint of their own: their writes are issued together with the ledger's own at
 * the end of the batch. If a statement of a set fails, the transaction is lost as a whole and
 * the batch is applied once more, from the start, without sets — where the failure is the one
 * mutation's, as above. Nothing of the first try is kept, so exactly-once holds.
 */
import { createHash } from 'node:crypto';
import { and, eq, gte, inArray, lte, sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { configure } from 'safe-stable-stringify';
import { syncClients, syncMutationDigestRuns, syncRejections } from '@fieldchart/schema/db';
import { MAX_MUTATION_BYTES, MUTATION_NAMES, type IncomingMutation, type MutationName, type ServerMessage } from '@fieldchart/schema/sync';
import * as z from 'zod';
import { AppError, Invalid, TooMany } from '../../errors.ts';
import { safeError } from '../../log-safety.ts';
import type { Db } from '../../db/database.ts';
import type { Services } from '../index.ts';
import type { SessionState } from '../auth/sessions.ts';
import { SYNC_CHANNELS } from './channels.ts';
import { linkSession } from './devices.ts';
import type { MutationRunner } from './mutation-runner.ts';
import { allSettled, isRefused, settled } from '../batch-plan.ts';
import { runsInSet, type SetPlan } from './mutation-sets.ts';

export type MutationMessage = IncomingMutation;

export type MutationReply = Extract<ServerMessage, { type: 'ack' | 'reject' | 'retry' | 'failed' | 'conflict' }>;
type RejectReply = Extract<MutationReply, { type: 'reject' }>;

/**
 * Unexpected failures of one mutation in a row before it is parked as `failed`. A transient
 * cause (a deploy, a lock timeout) usually clears within a couple of retries; a bug does not,
 * and must not hold the device's queue.
 */
export const MAX_MUTATION_ATTEMPTS = 3;
/** Status and code under which a parked mutation is kept in `sync_rejections`. */
const PARKED_STATUS = 500;
const PARKED_CODE = 'mutation_failed';

export interface MutationDevice {
  readonly userId: string;
  readonly sessionId: string;
  readonly clientId: string;
  readonly organizationId: string | null;
  /** Ties each mutation's audit entries to where it came from (`sync:<socket>` or the HTTP request id). */
  readonly requestIdPrefix: string;
  /**
   * The sync protocol the device speaks (the socket's hello, the HTTP body's `protocol`): from
   * 2 on, a replayed id with other content is answered `conflict` (a cloned install).
   */
  readonly protocol: number;
  /**
   * Record the session as one this device used (POST /sync/mutations: a device that never
   * said hello is known only here), so that revoking the device ends the session too.
   */
  readonly linkSession?: boolean;
  /**
   * Answered outside the socket (POST /sync/mutations): the device's open socket, if it has
   * one, must still get a `synced` whose acked_through covers what this batch processed. A
   * write pokes it through its table's notification, but a refusal, a parked mutation or an
   * event the server already held writes no row — and a quiet server would then never send one,
   * leaving the device's acknowledged entry waiting (its `whenSynced` with it). So the owner is
   * poked at commit, for a full run.
   */
  readonly answeredOverHttp?: boolean;
}

/** What became of one mutation this batch processed for the first time (for /metrics). */
export interface JudgedMutation {
  readonly name: MutationName;
  readonly outcome: 'applied' | 'refused' | 'failed';
}

export type BatchOutcome =
  | {
      readonly kind: 'applied';
      readonly replies: MutationReply[];
      readonly lastMutationId: number;
      readonly retryFrom: number | null;
      /**
       * Each mutation this batch's committed transaction judged, once: a set lost and applied
       * again one by one, or a mutation answered `retry`, is not in it twice.
       */
      readonly judged: readonly JudgedMutation[];
    }
  | { readonly kind: 'session'; readonly state: Exclude<SessionState, 'live'> }
  /** The device was revoked: nothing of the batch was applied or counted. */
  | { readonly kind: 'device_revoked' };

/** A statement of a set failed: the transaction is lost, and the batch goes again without sets. */
class SetFailed extends Error {
  constructor(cause: unknown) {
    super('a mutation set failed', { cause });
  }
}

const asSetFailure = <T>(work: () => Promise<T>): Promise<T> =>
  work().catch((err: unknown) => {
    throw new SetFailed(err);
  });

export async function applyMutationBatch(
  services: Services,
  runMutation: MutationRunner,
  device: MutationDevice,
  batch: readonly MutationMessage[],
  log: FastifyBaseLogger,
): Promise<BatchOutcome> {
  try {
    return await applyInTransaction(services, runMutation, device, batch, log, true);
  } catch (err) {
    if (!(err instanceof SetFailed)) throw err;
    return applyInTransaction(services, runMutation, device, batch, log, false);
  }
}

async function applyInTransaction(
  services: Services,
  runMutation: MutationRunner,
  device: MutationDevice,
  batch: readonly MutationMessage[],
  log: FastifyBaseLogger,
  withSets: boolean,
): Promise<BatchOutcome> {
  return services.unitOfWork.transaction(async (tx): Promise<BatchOutcome> => {
    const where = and(eq(syncClients.userId, device.userId), eq(syncClients.clientId, device.clientId));
    const lockClient = () =>
      tx
        .select({ last: syncClients.lastMutationId, failingId: syncClients.failingMutationId, failingAttempts: syncClients.failingAttempts, revokedAt: syncClients.revokedAt })
        .from(syncClients)
        .where(where)
        .for('update')
        .execute();
    // The session check and the device's row, issued together (one round trip on PostgreSQL).
    let [state, [client]] = await allSettled([services.sessions.state(device.userId, device.sessionId), lockClient()]);
    if (state !== 'live') return { kind: 'session', state };
    if (!client) {
      // A new device: its row, once.
      await tx.insert(syncClients).values({ userId: device.userId, clientId: device.clientId }).onConflictDoNothing();
      [client] = await lockClient();
    }
    // Under the row lock a revocation also takes: a batch that waited for it sees it, so no
    // mutation of a revoked device is applied after the revocation commits.
    if (client?.revokedAt) return { kind: 'device_revoked' };
    if (device.linkSession) await linkSession(tx, device.userId, device.clientId, device.sessionId);
    let last = client?.last ?? 0;
    let failing = { id: client?.failingId ?? null, attempts: client?.failingAttempts ?? 0 };
    let retryFrom: number | null = null;
    const replies: MutationReply[] = [];
    const judgedNow: JudgedMutation[] = [];
    const ctx = { actorUserId: device.userId, organizationId: device.organizationId };
    const seen = batch.filter((m) => m.mutation_id <= last).map((m) => m.mutation_id);
    const refused = new Map(
      seen.length === 0
        ? []
        : (
            await tx
              .select()
              .from(syncRejections)
              .where(and(eq(syncRejections.userId, device.userId), eq(syncRejections.clientId, device.clientId), inArray(syncRejections.mutationId, seen)))
          ).map((r) => [r.mutationId, r]),
    );
    const stored = seen.length === 0 ? new Map<number, string>() : await storedDigests(tx, device, seen);
    // Digests of what this batch processes, written with the new last_mutation_id in one statement.
    const processed: Array<{ mutationId: number; digest: string }> = [];
    const processedNow = (m: MutationMessage, digest: string) => {
      processed.push({ mutationId: m.mutation_id, digest });
      stored.set(m.mutation_id, digest);
    };
    const store = (reply: RejectReply | Extract<MutationReply, { type: 'failed' }>) => {
      const row = {
        userId: device.userId,
        clientId: device.clientId,
        mutationId: reply.mutation_id,
        status: reply.type === 'reject' ? reply.status : PARKED_STATUS,
        code: reply.code,
        message: reply.message,
        errors: reply.type === 'reject' ? (reply.errors ?? null) : null,
      };
      refused.set(row.mutationId, { ...row, createdAt: new Date() });
      return tx.insert(syncRejections).values(row);
    };
    // Sets planned and not written yet: written together with the ledger's rows at the end, or
    // before a mutation applied one by one or another set (which may read what they write).
    const unwritten: SetPlan[] = [];
    const writeSets = () => asSetFailure(() => settled(unwritten.splice(0).map((plan) => plan.write())));
    // Mutations already settled by a set (below): skipped by the one-by-one loop. A mutation a
    // set would refuse, and a run too short to be a set, go one by one, without another try.
    let setUntil = -1;
    let oneByOneUntil = -1;
    for (const [i, m] of batch.entries()) {
      if (i <= setUntil) continue;
      const digest = digestOf(m);
      // Already processed (a lost answer, a replay, a duplicated frame): answered as it was the
      // first time — the same reject or failure for a refused or parked one, an ack otherwise —
      // and not applied. Unless another install with this client id sent other content under
      // the id: a device that speaks protocol 2 is told, and re-keys itself.
      if (m.mutation_id <= last) {
        const before = stored.get(m.mutation_id);
        if (device.protocol >= 2 && before !== undefined && before !== digest) {
          replies.push({ type: 'conflict', mutation_id: m.mutation_id, code: 'client_id_reused', message: CONFLICT_MESSAGE });
          continue;
        }
        const r = refused.get(m.mutation_id);
        replies.push(
          !r
            ? { type: 'ack', mutation_id: m.mutation_id, result: { duplicate: true } }
            : r.status >= 500
              ? { type: 'failed', mutation_id: m.mutation_id, code: r.code, message: r.message, attempts: MAX_MUTATION_ATTEMPTS }
              : { type: 'reject', mutation_id: m.mutation_id, status: r.status, code: r.code, message: r.message, ...(r.errors ? { errors: r.errors } : {}) },
        );
        continue;
      }
      const judged = judge(m);
      if ('type' in judged) {
        replies.push(judged);
        await store(judged);
        processedNow(m, digest);
        last = m.mutation_id;
        continue;
      }
      const { runSet } = runMutation;
      const set = withSets && runSet && i > oneByOneUntil ? setFrom(batch, i, last, judged) : [];
      if (set.length > 1 && runSet) {
        // A set reads what the sets before it decided (mutations refused by their envelope may
        // separate two): those are written first.
        if (unwritten.length > 0) await writeSets();
        const planOf = (run: typeof set) =>
          asSetFailure(() =>
            runSet(
              ctx,
              run.map((s) => ({ name: s.name, args: s.args, requestId: `${device.requestIdPrefix}:${s.m.mutation_id}` })),
            ),
          );
        let run = set;
        let plan = await planOf(run);
        // One would be refused: those before it go as a set of their own (planned again: the
        // first plan decided them beside what follows), it goes on its own, sets resume after it.
        if (isRefused(plan)) {
          const { refusedAt } = plan;
          oneByOneUntil = i + refusedAt;
          run = set.slice(0, refusedAt);
          if (run.length > 1) plan = await planOf(run);
        }
        if (run.length > 1 && !isRefused(plan)) {
          unwritten.push(plan);
          for (const [k, s] of run.entries()) {
            replies.push({ type: 'ack', mutation_id: s.m.mutation_id, result: plan.results[k] ?? null });
            judgedNow.push({ name: s.name, outcome: 'applied' });
            processedNow(s.m, k === 0 ? digest : digestOf(s.m));
            last = s.m.mutation_id;
          }
          setUntil = i + run.length - 1;
          continue;
        }
        // Too short to be a set, or (never expected) a prefix that no longer plans: one by one.
        oneByOneUntil = Math.max(oneByOneUntil, i + run.length);
      }
      await writeSets();
      try {
        const result = await services.unitOfWork.savepoint(() =>
          runMutation({ ...ctx, requestId: `${device.requestIdPrefix}:${m.mutation_id}` }, judged.name, judged.args),
        );
        replies.push({ type: 'ack', mutation_id: m.mutation_id, result: result ?? null });
        judgedNow.push({ name: judged.name, outcome: 'applied' });
      } catch (err) {
        const reply = replyOf(err, m.mutation_id);
        if (reply?.type === 'reject') {
          replies.push(reply);
          judgedNow.push({ name: judged.name, outcome: 'refused' });
          await store(reply);
        } else {
          // Not this mutation's fault (a throttle, a lock timeout, a lost connection) or not
          // known to be: it stays unprocessed, and so does everything after it, which the
          // device sends again in order. An unexpected error counts towards parking it.
          const unexpected = reply === null;
          if (unexpected) {
            log.error({ err: safeError(err), mutation_id: m.mutation_id, name: judged.name }, 'sync mutation failed on an unexpected error');
            failing = { id: m.mutation_id, attempts: failing.id === m.mutation_id ? failing.attempts + 1 : 1 };
          }
          if (!unexpected || failing.attempts < MAX_MUTATION_ATTEMPTS) {
            const after = reply?.after_ms ?? 500 * 2 ** failing.attempts;
            for (const rest of batch.slice(i)) replies.push({ type: 'retry', mutation_id: rest.mutation_id, after_ms: after });
            retryFrom = m.mutation_id;
            break;
          }
          // Parked: processed, kept, answered `failed`; the queue behind it moves on.
          const parked = {
            type: 'failed' as const,
            mutation_id: m.mutation_id,
            code: PARKED_CODE,
            message: 'The server could not apply this change; it is kept on the device',
            attempts: failing.attempts,
          };
          replies.push(parked);
          judgedNow.push({ name: judged.name, outcome: 'failed' });
          await store(parked);
          failing = { id: null, attempts: 0 };
        }
      }
      processedNow(m, digest);
      last = m.mutation_id;
    }
    // The batch's digests (one row) and the device's new last id in one statement, issued with the sets' writes.
    const advance = sql`
      update ${syncClients} set last_mutation_id = ${last}, failing_mutation_id = ${failing.id}, failing_attempts = ${failing.attempts}, updated_at = now()
      where user_id = ${device.userId}::uuid and client_id = ${device.clientId}::uuid`;
    const [first, final] = [processed[0], processed.at(-1)];
    const ledger = tx.execute(
      first && final
        ? sql`
      with digests as (
        insert into ${syncMutationDigestRuns} (user_id, client_id, first_mutation_id, last_mutation_id, mutation_ids, digests)
        values (${device.userId}::uuid, ${device.clientId}::uuid, ${first.mutationId}, ${final.mutationId},
          ${`{${processed.map((p) => p.mutationId).join(',')}}`}::bigint[], ${processed.map((p) => p.digest).join('')})
      )
      ${advance}`
        : advance,
    );
    if (unwritten.length > 0) await asSetFailure(() => settled([...unwritten.splice(0).map((plan) => plan.write()), ledger]));
    else await ledger;
    if (device.answeredOverHttp && processed.length > 0) await tx.execute(sql`select pg_notify(${SYNC_CHANNELS.data}, ${device.userId})`);
    return { kind: 'applied', replies, lastMutationId: last, retryFrom, judged: judgedNow };
  });
}

/**
 * The run of mutations from `start` that may be applied as one set: new (ids rising above
 * `last`), well-formed envelopes, of the kinds that share a set (mutation-sets.ts). The first
 * is judged already (`first`).
 */
function setFrom(
  batch: readonly MutationMessage[],
  start: number,
  last: number,
  first: { name: MutationName; args: Record<string, unknown> },
): Array<{ m: MutationMessage; name: MutationName; args: Record<string, unknown> }> {
  const run: Array<{ m: MutationMessage; name: MutationName; args: Record<string, unknown> }> = [];
  let previous = last;
  for (let j = start; j < batch.length; j++) {
    const m = batch[j] as MutationMessage;
    if (m.mutation_id <= previous) break;
    const judged = j === start ? first : judge(m);
    if ('type' in judged || !runsInSet(judged.name)) break;
    run.push({ m, ...judged });
    previous = m.mutation_id;
  }
  return run;
}

/** Characters of one digest (hex sha256) in a run's `digests`. */
const DIGEST_CHARS = 64;

/**
 * The stored digests of `ids` (processed ids of the device): from the runs that overlap them —
 * the run holding the lowest and every run that starts at or below the highest, read by the
 * primary key's range.
 */
async function storedDigests(tx: Db, device: Pick<MutationDevice, 'userId' | 'clientId'>, ids: readonly number[]): Promise<Map<number, string>> {
  const [low, high] = [Math.min(...ids), Math.max(...ids)];
  const runs = syncMutationDigestRuns;
  const ofDevice = and(eq(runs.userId, device.userId), eq(runs.clientId, device.clientId));
  const from = sql`coalesce((select max(${runs.firstMutationId}) from ${runs} where ${ofDevice} and ${runs.firstMutationId} <= ${low}), ${low})`;
  const rows = await tx
    .select({ ids: runs.mutationIds, digests: runs.digests })
    .from(runs)
    .where(and(ofDevice, gte(runs.firstMutationId, from), lte(runs.firstMutationId, high)));
  const wanted = new Set(ids);
  const stored = new Map<number, string>();
  for (const run of rows) {
    run.ids.forEach((id, k) => {
      if (wanted.has(Number(id))) stored.set(Number(id), run.digests.slice(k * DIGEST_CHARS, (k + 1) * DIGEST_CHARS));
    });
  }
  return stored;
}

/** The device's last processed mutation id (0 for a new device). */
export async function lastMutationIdOf(services: Services, userId: string, clientId: string): Promise<number> {
  const [client] = await services.unitOfWork.db
    .select({ last: syncClients.lastMutationId })
    .from(syncClients)
    .where(and(eq(syncClients.userId, userId), eq(syncClients.clientId, clientId)));
  return client?.last ?? 0;
}

const CONFLICT_MESSAGE = 'This mutation id was already used by another install with the same client id';

/** Keys sorted at every depth: the same content gives the same text whatever the key order. */
const canonicalJson = configure({ deterministic: true, bigint: false, circularValue: null });

/** Hex sha256 of the canonical JSON of a mutation's name and arguments (what it says, not when). */
export function digestOf(m: Pick<MutationMessage, 'name' | 'args'>): string {
  const text = canonicalJson({ name: m.name ?? null, args: m.args ?? null }) ?? 'null';
  return createHash('sha256').update(text).digest('hex');
}

const clientTime = z.iso.datetime({ offset: true });

/**
 * The envelope of one mutation, judged before it runs: a name this server knows, arguments
 * that are an object of bounded size, a `client_time`. A fault is that mutation's reject.
 */
function judge(m: MutationMessage): { name: MutationName; args: Record<string, unknown> } | RejectReply {
  const reject = (status: number, code: string, message: string, field: string): RejectReply => ({
    type: 'reject',
    mutation_id: m.mutation_id,
    status,
    code,
    message,
    errors: { [field]: [message] },
  });
  let size: number;
  try {
    size = Buffer.byteLength(JSON.stringify(m.args ?? null));
  } catch {
    size = Infinity;
  }
  if (size > MAX_MUTATION_BYTES) return reject(413, 'payload_too_large', `The mutation is larger than ${MAX_MUTATION_BYTES} bytes`, 'args');
  // The name is not echoed: it is the device's text, and rejections are stored.
  if (typeof m.name !== 'string' || !(MUTATION_NAMES as readonly string[]).includes(m.name)) {
    return reject(422, 'unknown_mutation', 'This server does not know this mutation', 'name');
  }
  if (typeof m.args !== 'object' || m.args === null || Array.isArray(m.args)) return reject(422, 'validation_failed', 'args must be an object', 'args');
  if (!clientTime.safeParse(m.client_time).success) return reject(422, 'validation_failed', 'client_time must be an ISO 8601 instant with an offset', 'client_time');
  return { name: m.name as MutationName, args: m.args as Record<string, unknown> };
}

/** The SQLSTATE of a database error from either driver (drizzle may wrap it in `cause`). */
function sqlStateOf(err: unknown): string | null {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return null;
}

/**
 * SQLSTATE classes of a failure that is nobody's fault and may pass: connection exceptions,
 * transaction rollbacks (serialization, deadlock), insufficient resources, operator
 * intervention (shutdown, cancel), lock not available.
 */
const TRANSIENT = /^(08|40|53|57)|^55P03$/;

/**
 * A refusal in the REST API's terms, a retry for a throttle or a transient database failure,
 * or null: an unexpected error (counted, then parked).
 */
function replyOf(err: unknown, mutationId: number): Extract<MutationReply, { type: 'reject' | 'retry' }> | null {
  if (err instanceof TooMany) {
    const seconds = Number(err.headers['retry-after'] ?? '1');
    return { type: 'retry', mutation_id: mutationId, after_ms: seconds * 1000 };
  }
  if (err instanceof AppError && err.statusCode >= 400 && err.statusCode < 500) {
    return storable({
      type: 'reject',
      mutation_id: mutationId,
      status: err.statusCode,
      code: err.code,
      message: err.message,
      ...(err instanceof Invalid && Object.keys(err.errors).length > 0 ? { errors: err.errors } : {}),
    });
  }
  const state = sqlStateOf(err);
  // A value the database cannot hold (a NUL byte, a date out of range, a number too big): the
  // mutation's data, refused like invalid input. The driver's text quotes values: not sent.
  if (state?.startsWith('22')) {
    return { type: 'reject', mutation_id: mutationId, status: 422, code: 'invalid_value', message: 'A value in this change cannot be stored' };
  }
  if (state && TRANSIENT.test(state)) return { type: 'retry', mutation_id: mutationId, after_ms: 1000 + Math.floor(Math.random() * 2000) };
  return null;
}

/**
 * A reject as it can be stored and sent: field names and messages may quote the device's text
 * (an unknown key), which may hold a NUL byte or a lone surrogate that PostgreSQL's text and
 * jsonb refuse — and a refusal that cannot be stored would fail the whole batch. Bounded too.
 */
function storable(reply: RejectReply): RejectReply {
  const clean = (s: string, max: number) => s.replace(/\u0000|\p{Cs}/gu, '\uFFFD').slice(0, max);
  const errors = reply.errors
    ? Object.fromEntries(Object.entries(reply.errors).slice(0, 50).map(([k, v]) => [clean(k, 200), v.slice(0, 10).map((m) => clean(m, 500))]))
    : undefined;
  const { errors: _, ...rest } = reply;
  return { ...rest, code: clean(reply.code, 100), message: clean(reply.message, 500), ...(errors && Object.keys(errors).length > 0 ? { errors } : {}) };
}
