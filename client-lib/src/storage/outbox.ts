/**
 * The outbox: every local write, numbered by the device's strictly increasing mutation id.
 * The counter lives in `meta` beside the entries, so it survives restarts with them and never
 * goes backwards. Entries are `pending` until the server acknowledges them, then `acked` until
 * the feed has brought the server's rows (they remain the optimistic overlay meanwhile).
 */
import type { MutationName } from '@fieldchart/schema/sync';
import type { LocalDb, Queryable } from './local-db.ts';
import { getMeta, setMeta } from './meta.ts';
import { openJson, sealJson, toBase64 } from './row-cipher.ts';
import { failureAd, outboxAd, outboxResultAd, rejectionAd } from './seal-ad.ts';

export interface OutboxEntry {
  readonly mutation_id: number;
  readonly name: MutationName;
  readonly args: Record<string, unknown>;
  /** What the device keeps beside the args to show the write (e.g. generated event ids). */
  readonly local: Record<string, unknown>;
  readonly client_time: string;
  readonly schedule_uuid: string | null;
  readonly state: 'pending' | 'acked';
  readonly attempts: number;
  readonly last_error: string | null;
}

/** A mutation the server refused, as the app sees it. */
export interface Rejection {
  readonly mutationId: number;
  readonly name: MutationName;
  readonly args: Record<string, unknown>;
  /** The visit the write was about, if any. */
  readonly scheduleUuid: string | null;
  /** The REST terms: 4xx status, snake_case code, message, per-field messages. */
  readonly status: number;
  readonly code: string;
  readonly message: string;
  readonly errors: Record<string, string[]>;
  readonly rejectedAt: string;
}

/**
 * A write the server parked after it failed there on unexpected errors a few times (the
 * server's `failed` answer): not applied, out of the queue so the writes behind it go on, and
 * kept here — arguments included — until the app retries or dismisses it.
 */
export interface Failure {
  readonly mutationId: number;
  readonly name: MutationName;
  readonly args: Record<string, unknown>;
  readonly scheduleUuid: string | null;
  readonly code: string;
  readonly message: string;
  /** How many times the server tried it. */
  readonly attempts: number;
  readonly failedAt: string;
}

const COLUMNS = 'mutation_id, name, sealed, client_time, schedule_uuid, state, attempts, last_error';

/** An outbox row as stored: `args` and `local` sealed together. */
type StoredEntry = Omit<OutboxEntry, 'args' | 'local'> & { readonly sealed: Uint8Array };
type Payload = { args: Record<string, unknown>; local: Record<string, unknown> };

async function openEntry(q: Queryable, stored: StoredEntry): Promise<OutboxEntry> {
  const { sealed, ...rest } = stored;
  const p = await openJson<Payload>(q.cipher, sealed, outboxAd(stored));
  return { ...rest, args: p.args, local: p.local };
}

async function selectEntries(q: Queryable, sql: string, params: readonly unknown[]): Promise<OutboxEntry[]> {
  const rows = await q.query<StoredEntry>(sql, params);
  return Promise.all(rows.map((r) => openEntry(q, r)));
}

type NewEntry = { name: MutationName; args: Record<string, unknown>; local?: Record<string, unknown>; scheduleUuid: string | null; clientTime: string };

/** A write sealed for the outbox, before it has a mutation id (the id is not in its associated data). */
export interface SealedEntry {
  readonly name: MutationName;
  readonly scheduleUuid: string | null;
  readonly clientTime: string;
  /** Unique to this write: a fresh nonce seals every value (row-cipher.ts). */
  readonly sealed: Uint8Array;
}

export async function sealEntry(q: Pick<Queryable, 'cipher'>, entry: NewEntry): Promise<SealedEntry> {
  const payload: Payload = { args: entry.args, local: entry.local ?? {} };
  const sealed = await sealJson(q.cipher, payload, outboxAd({ name: entry.name, client_time: entry.clientTime, schedule_uuid: entry.scheduleUuid }));
  return { name: entry.name, scheduleUuid: entry.scheduleUuid, clientTime: entry.clientTime, sealed };
}

/** Appends a sealed write; call inside the transaction that makes the write. Answers its mutation id. */
export async function appendSealed(tx: Queryable, entry: SealedEntry): Promise<number> {
  const id = (await getMeta(tx, 'next_mutation_id')) ?? 1;
  await tx.query(`insert into outbox (mutation_id, name, sealed, client_time, schedule_uuid) values ($1, $2, $3, $4, $5)`, [
    id,
    entry.name,
    entry.sealed,
    entry.clientTime,
    entry.scheduleUuid,
  ]);
  await setMeta(tx, 'next_mutation_id', id + 1);
  return id;
}

/** Appends a write; call inside the transaction that makes the write. Answers its mutation id. */
export async function appendToOutbox(tx: Queryable, entry: NewEntry): Promise<number> {
  return appendSealed(tx, await sealEntry(tx, entry));
}

/** The mutation id under which this sealed write is in the outbox, or null. */
export async function idOfSealed(q: Queryable, entry: SealedEntry): Promise<number | null> {
  const [row] = await q.query<{ mutation_id: number }>('select mutation_id from outbox where client_time = $1 and sealed = $2', [entry.clientTime, entry.sealed]);
  return row?.mutation_id ?? null;
}

/** Pending entries after `afterId`, oldest first. */
export async function pendingEntries(db: Queryable, afterId: number, limit: number): Promise<OutboxEntry[]> {
  return selectEntries(db, `select ${COLUMNS} from outbox where state = 'pending' and mutation_id > $1 order by mutation_id limit $2`, [afterId, limit]);
}

/** Every entry still shown optimistically (pending and acked-not-settled), oldest first. */
export async function overlayEntries(db: Queryable): Promise<OutboxEntry[]> {
  return selectEntries(db, `select ${COLUMNS} from outbox order by mutation_id`, []);
}

export async function pendingCount(db: Queryable): Promise<number> {
  const rows = await db.query<{ n: number }>(`select count(*)::int as n from outbox where state = 'pending'`);
  return rows[0]?.n ?? 0;
}

/** A server's acknowledgement of one entry. */
export interface Ack {
  readonly mutationId: number;
  readonly result: unknown;
  /**
   * The `synced` count after which the feed has surely brought the server's rows (protocol 1),
   * or null when `acked_through` or the next socket's first `synced` settles it.
   */
  readonly settleAfter: number | null;
}

/** An entry acknowledged now, with the acknowledgement it took. */
export interface Acked {
  readonly entry: OutboxEntry;
  readonly ack: Ack;
}

/**
 * Marks entries acknowledged and records their visits' receipts, in one transaction and a
 * statement per table whatever their number: a device back online gets a window's answers
 * together (protocol 4), and a transaction each made it far slower than the server that
 * answered them. Answers the entries acknowledged now, in mutation order; an ack of nothing
 * pending (a duplicate) is left out.
 */
export async function ackEntries(db: LocalDb, acks: readonly Ack[], at: string): Promise<Acked[]> {
  if (acks.length === 0) return [];
  // An entry answered twice keeps its first answer, as when each is applied as it comes.
  const byId = new Map<number, Ack>();
  for (const a of acks) if (!byId.has(a.mutationId)) byId.set(a.mutationId, a);
  return db.transaction(async (tx) => {
    const entries = await selectEntries(tx, `select ${COLUMNS} from outbox where mutation_id = any($1::bigint[]) and state = 'pending' order by mutation_id`, [[...byId.keys()]]);
    if (entries.length === 0) return [];
    const acked = entries.map((entry) => ({ entry, ack: byId.get(entry.mutation_id) as Ack }));
    const rows = await Promise.all(
      acked.map(async ({ entry, ack }) => ({
        mutation_id: entry.mutation_id,
        sealed: toBase64(await sealJson(tx.cipher, ack.result ?? null, outboxResultAd(entry))),
        settle_after: ack.settleAfter,
      })),
    );
    await tx.query(
      `update outbox o set state = 'acked', sealed_result = decode(x.sealed, 'base64'), acked_at = $2, settle_after_synced = x.settle_after, last_error = null
       from jsonb_to_recordset($1::jsonb) as x(mutation_id bigint, sealed text, settle_after bigint) where o.mutation_id = x.mutation_id`,
      [JSON.stringify(rows), at],
    );
    const receipts = new Map<string, number>();
    for (const e of entries) if (e.schedule_uuid) receipts.set(e.schedule_uuid, Math.max(receipts.get(e.schedule_uuid) ?? 0, e.mutation_id));
    if (receipts.size > 0) await recordReceipts(tx, receipts, at);
    return acked;
  });
}

/** Each visit's receipt: the last of its mutations acknowledged, and when. */
async function recordReceipts(tx: Queryable, lastAcked: ReadonlyMap<string, number>, at: string): Promise<void> {
  await tx.query(
    `insert into visit_receipts (schedule_uuid, last_acked_mutation_id, acked_at)
     select x.schedule_uuid, x.last, $2 from jsonb_to_recordset($1::jsonb) as x(schedule_uuid text, last bigint)
     on conflict (schedule_uuid) do update set last_acked_mutation_id = greatest(visit_receipts.last_acked_mutation_id, excluded.last_acked_mutation_id), acked_at = excluded.acked_at`,
    [JSON.stringify([...lastAcked].map(([schedule_uuid, last]) => ({ schedule_uuid, last }))), at],
  );
}

/**
 * Removes a refused entry (which rolls its optimistic change back: the overlay no longer has
 * it) and records the refusal, in one transaction. Null if the entry is gone already.
 */
export async function rejectEntry(
  db: LocalDb,
  r: { mutation_id: number; status: number; code: string; message: string; errors?: Record<string, string[]> | undefined },
  at: string,
): Promise<Rejection | null> {
  return db.transaction(async (tx) => {
    const [entry] = await selectEntries(tx, `delete from outbox where mutation_id = $1 returning ${COLUMNS}`, [r.mutation_id]);
    if (!entry) return null;
    const sealed = await sealJson(tx.cipher, { args: entry.args, message: r.message, errors: r.errors ?? {} } satisfies RejectionPayload, rejectionAd(entry.mutation_id));
    await tx.query(
      `insert into rejections (mutation_id, name, sealed, schedule_uuid, status, code, rejected_at)
       values ($1, $2, $3, $4, $5, $6, $7) on conflict (mutation_id) do nothing`,
      [entry.mutation_id, entry.name, sealed, entry.schedule_uuid, r.status, r.code, at],
    );
    return {
      mutationId: entry.mutation_id,
      name: entry.name,
      args: entry.args,
      scheduleUuid: entry.schedule_uuid,
      status: r.status,
      code: r.code,
      message: r.message,
      errors: r.errors ?? {},
      rejectedAt: at,
    };
  });
}

/** Refused or parked writes, dropped. Dropped twice it does no harm: made again across a change of the leading tab. */
async function dismiss(db: LocalDb, table: 'rejections' | 'failures', mutationIds: readonly number[] | undefined): Promise<void> {
  await db.transaction(
    async (tx) => {
      if (mutationIds) await tx.query(`delete from ${table} where mutation_id = any($1::bigint[])`, [mutationIds]);
      else await tx.query(`delete from ${table}`);
    },
    { repeatable: true },
  );
}

/** What a rejection keeps sealed: the write's arguments and the server's words about them. */
type RejectionPayload = { args: Record<string, unknown>; message: string; errors: Record<string, string[]> | null };

export async function listRejections(db: Queryable): Promise<Rejection[]> {
  const rows = await db.query<{
    mutation_id: number;
    name: MutationName;
    sealed: Uint8Array;
    schedule_uuid: string | null;
    status: number;
    code: string;
    rejected_at: string;
  }>('select mutation_id, name, sealed, schedule_uuid, status, code, rejected_at from rejections order by mutation_id');
  return Promise.all(
    rows.map(async (r) => {
      const p = await openJson<RejectionPayload>(db.cipher, r.sealed, rejectionAd(r.mutation_id));
      return {
        mutationId: r.mutation_id,
        name: r.name,
        args: p.args,
        scheduleUuid: r.schedule_uuid,
        status: r.status,
        code: r.code,
        message: p.message,
        errors: p.errors ?? {},
        rejectedAt: r.rejected_at,
      };
    }),
  );
}

export const dismissRejections = (db: LocalDb, mutationIds?: readonly number[]): Promise<void> => dismiss(db, 'rejections', mutationIds);

/**
 * Moves a parked entry (`failed`) from the outbox to `failures`, in one transaction: its
 * optimistic change is no longer shown (the server did not apply it), its arguments are kept.
 * Null if the entry is gone already.
 */
export async function parkEntry(db: LocalDb, r: { mutation_id: number; code: string; message: string; attempts: number }, at: string): Promise<Failure | null> {
  return db.transaction(async (tx) => {
    const [entry] = await selectEntries(tx, `delete from outbox where mutation_id = $1 returning ${COLUMNS}`, [r.mutation_id]);
    if (!entry) return null;
    const sealed = await sealJson(tx.cipher, { args: entry.args, local: entry.local, message: r.message } satisfies FailurePayload, failureAd(entry.mutation_id));
    await tx.query(
      `insert into failures (mutation_id, name, sealed, client_time, schedule_uuid, code, attempts, failed_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8) on conflict (mutation_id) do nothing`,
      [entry.mutation_id, entry.name, sealed, entry.client_time, entry.schedule_uuid, r.code, r.attempts, at],
    );
    return { mutationId: entry.mutation_id, name: entry.name, args: entry.args, scheduleUuid: entry.schedule_uuid, code: r.code, message: r.message, attempts: r.attempts, failedAt: at };
  });
}

/** What a parked write keeps sealed. */
type FailurePayload = { args: Record<string, unknown>; local: Record<string, unknown>; message: string };

export async function listFailures(db: Queryable): Promise<Failure[]> {
  const rows = await db.query<{
    mutation_id: number;
    name: MutationName;
    sealed: Uint8Array;
    schedule_uuid: string | null;
    code: string;
    attempts: number;
    failed_at: string;
  }>('select mutation_id, name, sealed, schedule_uuid, code, attempts, failed_at from failures order by mutation_id');
  return Promise.all(
    rows.map(async (r) => {
      const p = await openJson<FailurePayload>(db.cipher, r.sealed, failureAd(r.mutation_id));
      return {
        mutationId: r.mutation_id,
        name: r.name,
        args: p.args,
        scheduleUuid: r.schedule_uuid,
        code: r.code,
        message: p.message,
        attempts: r.attempts,
        failedAt: r.failed_at,
      };
    }),
  );
}

export async function failureCount(db: Queryable): Promise<number> {
  const rows = await db.query<{ n: number }>('select count(*)::int as n from failures');
  return rows[0]?.n ?? 0;
}

/**
 * Puts parked writes back at the end of the queue, in their order, under new mutation ids:
 * the server has processed their old ids (it answers them `failed` again), a new id is a new
 * attempt. Answers the new ids. Sealed for the outbox before the transaction, as a new write is
 * (writes.ts `queueWrite`): across a change of the leading tab the next leader's outbox says by
 * those bytes whether they went in — once, never twice.
 */
export async function requeueFailures(db: LocalDb, mutationIds?: readonly number[]): Promise<number[]> {
  const rows = await db.query<{ mutation_id: number; name: MutationName; sealed: Uint8Array; client_time: string; schedule_uuid: string | null }>(
    `select mutation_id, name, sealed, client_time, schedule_uuid from failures where $1::bigint[] is null or mutation_id = any($1::bigint[]) order by mutation_id`,
    [mutationIds ?? null],
  );
  const requeued = await Promise.all(
    rows.map(async (r) => {
      const p = await openJson<FailurePayload>(db.cipher, r.sealed, failureAd(r.mutation_id));
      return { parkedAs: r.mutation_id, entry: await sealEntry(db, { name: r.name, args: p.args, local: p.local, scheduleUuid: r.schedule_uuid, clientTime: r.client_time }) };
    }),
  );
  if (requeued.length === 0) return [];
  return db.transaction(
    async (tx) => {
      // Only those still parked: another tab may have retried or dismissed some meanwhile.
      const taken = await tx.query<{ mutation_id: number }>('delete from failures where mutation_id = any($1::bigint[]) returning mutation_id', [requeued.map((r) => r.parkedAs)]);
      const still = new Set(taken.map((t) => t.mutation_id));
      const ids: number[] = [];
      for (const r of requeued) if (still.has(r.parkedAs)) ids.push(await appendSealed(tx, r.entry));
      return ids;
    },
    {
      // One transaction: all of them went in, or none did.
      made: async (q) => {
        const ids: number[] = [];
        for (const r of requeued) {
          const id = await idOfSealed(q, r.entry);
          if (id !== null) ids.push(id);
        }
        return ids.length > 0 ? ids : null;
      },
    },
  );
}

export const dismissFailures = (db: LocalDb, mutationIds?: readonly number[]): Promise<void> => dismiss(db, 'failures', mutationIds);

/** Notes a `retry` (or another transient failure) against the head entry. */
export async function recordAttempt(db: Queryable, mutationId: number, error: string): Promise<void> {
  await db.query('update outbox set attempts = attempts + 1, last_error = $2 where mutation_id = $1', [mutationId, error]);
}

/**
 * On `welcome`: entries up to the server's `last_mutation_id` were processed, but their
 * answers were lost — applied or refused, the device cannot tell — so they stay pending and
 * are sent again: the server answers each as it did the first time (an ack, or the same
 * reject) without applying it twice. Acked entries settle at the next `synced`, whose feed run
 * began after all of them committed. If the server has seen ids this device never handed out
 * (its last id is not below our counter: a restored or copied database), the pending entries
 * cannot have been processed: they are renumbered after the server's last id rather than
 * dropped, keeping their order.
 */
export async function reconcileOnWelcome(db: LocalDb, lastMutationId: number, syncedCount: number): Promise<{ renumbered: number }> {
  return db.transaction(async (tx) => {
    const next = (await getMeta(tx, 'next_mutation_id')) ?? 1;
    let renumbered = 0;
    if (lastMutationId >= next) {
      const [range] = await tx.query<{ lo: number | null; n: number }>(`select min(mutation_id)::float8 as lo, count(*)::int as n from outbox where state = 'pending'`);
      if (range && range.lo !== null) {
        // New ids all exceed every old one, so the update never collides with itself.
        await tx.query(`update outbox set mutation_id = mutation_id - $1 + $2 where state = 'pending'`, [range.lo, lastMutationId + 1]);
        renumbered = range.n;
      }
      const [max] = await tx.query<{ m: number | null }>('select max(mutation_id)::float8 as m from outbox');
      await setMeta(tx, 'next_mutation_id', Math.max(lastMutationId, max?.m ?? 0) + 1);
    }
    await tx.query(`update outbox set settle_after_synced = $1 where state = 'acked'`, [syncedCount + 1]);
    return { renumbered };
  });
}

/**
 * Drops acked entries the feed has caught up with: those whose `synced` count has come and,
 * on protocol 2, every one up to the server's `acked_through` (the rows they changed are in
 * what the device has received). Answers how many.
 */
export async function settleAcked(db: Queryable, syncedCount: number, ackedThrough: number | null = null): Promise<number> {
  const rows = await db.query(
    `delete from outbox where state = 'acked' and (settle_after_synced <= $1 or mutation_id <= $2::bigint) returning mutation_id`,
    [syncedCount, ackedThrough],
  );
  return rows.length;
}

/** Acked entries still shown optimistically (waiting for the feed to bring their rows). */
export async function settlingCount(db: Queryable): Promise<number> {
  const rows = await db.query<{ n: number }>(`select count(*)::int as n from outbox where state = 'acked'`);
  return rows[0]?.n ?? 0;
}

/**
 * A cloned install (the server answered `conflict`: another install used this client id for
 * other content): a new client id, and every unanswered entry renumbered after every id this
 * device handed out, in its order, so it goes again under the new id. Acked entries keep
 * their ids (they were applied under the old one). One transaction: a crash leaves the old
 * id and numbers, and the server answers `conflict` again.
 */
export async function rekeyOutbox(db: LocalDb): Promise<{ clientId: string; renumbered: number }> {
  return db.transaction(async (tx) => {
    const clientId = globalThis.crypto.randomUUID();
    await setMeta(tx, 'client_id', clientId);
    const next = (await getMeta(tx, 'next_mutation_id')) ?? 1;
    const [range] = await tx.query<{ lo: number | null; hi: number | null; n: number }>(
      `select min(mutation_id)::float8 as lo, max(mutation_id)::float8 as hi, count(*)::int as n from outbox where state = 'pending'`,
    );
    if (!range || range.lo === null || range.hi === null) return { clientId, renumbered: 0 };
    // Every new id is above every id handed out, so the update never collides with itself.
    await tx.query(`update outbox set mutation_id = mutation_id - $1 + $2, attempts = 0, last_error = null where state = 'pending'`, [range.lo, next]);
    await setMeta(tx, 'next_mutation_id', range.hi - range.lo + next + 1);
    return { clientId, renumbered: range.n };
  });
}

/** Per visit: pending entries and the last acknowledgement. */
export async function receiptRows(db: Queryable, scheduleUuids: readonly string[] | null): Promise<{ schedule_uuid: string; pending: number; acked_at: string | null }[]> {
  return db.query(
    `with p as (select schedule_uuid, count(*)::int as pending from outbox where state = 'pending' and schedule_uuid is not null group by schedule_uuid)
     select coalesce(p.schedule_uuid, r.schedule_uuid) as schedule_uuid, coalesce(p.pending, 0) as pending, r.acked_at
     from p full join visit_receipts r on r.schedule_uuid = p.schedule_uuid
     where $1::text[] is null or coalesce(p.schedule_uuid, r.schedule_uuid) = any($1::text[])`,
    [scheduleUuids],
  );
}

export async function clearOutbox(tx: Queryable): Promise<void> {
  await tx.query('delete from outbox');
  await tx.query('delete from rejections');
  await tx.query('delete from failures');
  await tx.query('delete from visit_receipts');
}
