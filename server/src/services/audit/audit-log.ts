import { and, asc, gte, lt, sql, type SQL } from 'drizzle-orm';
import { auditLog } from '@fieldchart/schema/db';
import { rowsOf, type Db } from '../../db/database.ts';
import type { Clock } from '../../clock.ts';
import { AppError } from '../../errors.ts';

/** Who is acting, from where: built once per request (or job) and handed to services. */
export interface AuditContext {
  readonly actorUserId: string | null;
  readonly organizationId: string | null;
  readonly requestId: string | null;
}

export type AuditAction = 'read' | 'list' | 'create' | 'update' | 'delete' | 'export' | 'rotate';
export type AuditOutcome = 'success' | 'not_found' | 'denied' | 'invalid' | 'error';

export interface AuditEntry {
  readonly action: AuditAction;
  readonly resourceType: string;
  readonly resourceId?: string | null;
  /** Non-PHI context only: counts, field names, route. */
  readonly details?: Record<string, unknown>;
}

function outcomeOf(err: unknown): AuditOutcome {
  if (err instanceof AppError) {
    if (err.statusCode === 404) return 'not_found';
    if (err.statusCode === 401 || err.statusCode === 403) return 'denied';
    if (err.statusCode === 409 || err.statusCode === 422) return 'invalid';
  }
  return 'error';
}

/**
 * The one statement that writes an audit row: an `INSERT … SELECT`, run alone by `record` or
 * as a data-modifying CTE of the statement it audits (a hot read and its audit row in one
 * round trip, atomic together). `outcome` and `moreDetails` (a jsonb merged into the entry's
 * details) may be SQL over the enclosing statement's CTEs.
 */
export function auditInsert(at: Date, ctx: AuditContext, entry: AuditEntry, outcome: AuditOutcome | SQL, moreDetails?: SQL): SQL {
  const details = sql`${JSON.stringify(entry.details ?? {})}::jsonb`;
  return sql`insert into ${auditLog} (at, actor_user_id, organization_id, action, resource_type, resource_id, outcome, request_id, details)
    select ${at.toISOString()}::timestamptz, ${ctx.actorUserId}::uuid, ${ctx.organizationId}::uuid, ${entry.action}::text, ${entry.resourceType}::text,
      ${entry.resourceId ?? null}::text, ${outcome}::text, ${ctx.requestId}::text, ${moreDetails ? sql`${details} || ${moreDetails}` : details}`;
}

/**
 * The PHI access trail. `around` records the outcome of an operation whatever it is: a
 * success inside the operation's own transaction (so it commits with it), a failure after
 * the rollback (so the denied or not-found attempt is still on record).
 */
export function createAuditLog(deps: { db: Db; clock: Clock; durably?: (write: (db: Db) => Promise<void>) => Promise<void> }) {
  const { db, clock } = deps;
  /** A failure is recorded outside the transaction it rolled back, also inside a unit of work. */
  const durably = deps.durably ?? ((write: (db: Db) => Promise<void>) => write(db));

  async function record(tx: Db, ctx: AuditContext, entry: AuditEntry, outcome: AuditOutcome): Promise<void> {
    await tx.execute(auditInsert(clock.now(), ctx, entry, outcome));
  }

  return {
    record,

    /** The audit row of a one-statement operation, as a CTE of that statement (see auditInsert). */
    insertFor(ctx: AuditContext, entry: AuditEntry, outcome: AuditOutcome | SQL, moreDetails?: SQL): SQL {
      return auditInsert(clock.now(), ctx, entry, outcome, moreDetails);
    },

    /** A one-statement operation whose statement failed wrote no row: the failure is recorded, best effort, as `around` does. */
    async failed(ctx: AuditContext, entry: AuditEntry, err: unknown): Promise<void> {
      await durably((d) => record(d, ctx, entry, outcomeOf(err)).catch(() => {})).catch(() => {});
    },

    /**
     * The success entries of many operations applied together (a set of sync mutations), in
     * one statement, in order: the rows each operation's `around` would have written, chained
     * by `audit_append` (migration audit_append) rather than row by row by the insert trigger.
     */
    async recordSucceeded(tx: Db, entries: ReadonlyArray<{ readonly ctx: AuditContext; readonly entry: AuditEntry }>): Promise<void> {
      if (entries.length === 0) return;
      const at = clock.now().toISOString();
      // One jsonb parameter rather than ten per row (the driver's encoding of a thousand
      // parameters cost more than the insert).
      const rows = entries.map(({ ctx, entry }) => ({
        actor_user_id: ctx.actorUserId,
        organization_id: ctx.organizationId,
        action: entry.action,
        resource_type: entry.resourceType,
        resource_id: entry.resourceId ?? null,
        outcome: 'success',
        request_id: ctx.requestId,
        details: entry.details ?? {},
      }));
      const [appended] = rowsOf<{ n: number | string }>(await tx.execute(sql`select audit_append(${at}::timestamptz, ${JSON.stringify(rows)}::jsonb) as n`));
      // Never expected: the caller's transaction must not commit without its audit rows.
      if (Number(appended?.n) !== rows.length) throw new Error(`audit_append wrote ${String(appended?.n)} of ${rows.length} audit rows`);
    },

    /**
     * Runs `fn` in a transaction and audits it. `fn` may refine the entry (e.g. set the id
     * of the record it created) through the `note` callback.
     */
    async around<T>(ctx: AuditContext, entry: AuditEntry, fn: (tx: Db, note: (more: Partial<AuditEntry>) => void) => Promise<T>): Promise<T> {
      let final: AuditEntry = entry;
      const note = (more: Partial<AuditEntry>) => {
        final = { ...final, ...more, details: { ...final.details, ...more.details } };
      };
      try {
        return await db.transaction(async (tx) => {
          const result = await fn(tx, note);
          await record(tx, ctx, final, 'success');
          return result;
        });
      } catch (err) {
        const outcome = outcomeOf(err);
        // Best effort, as ever: a failure to record must not hide the error being reported.
        await durably((d) => record(d, ctx, final, outcome).catch(() => {})).catch(() => {});
        throw err;
      }
    },

    /** Entries in [from, to), oldest first, for `fieldchart audit export`. */
    async export(opts: { from?: Date; to?: Date; limit?: number } = {}) {
      const rows = await db
        .select()
        .from(auditLog)
        .where(and(opts.from ? gte(auditLog.at, opts.from) : undefined, opts.to ? lt(auditLog.at, opts.to) : undefined))
        .orderBy(asc(auditLog.id))
        .limit(opts.limit ?? 100_000);
      return rows.map((r) => ({
        id: r.id,
        at: r.at.toISOString(),
        actor_user_id: r.actorUserId,
        organization_id: r.organizationId,
        action: r.action,
        resource_type: r.resourceType,
        resource_id: r.resourceId,
        outcome: r.outcome,
        request_id: r.requestId,
        details: r.details,
      }));
    },
  };
}

export type AuditLog = ReturnType<typeof createAuditLog>;
