/** Storing timer events and re-deriving the visit's EVV record from the whole sequence. */
import { eq, sql } from 'drizzle-orm';
import type * as z from 'zod';
import type { timerEventsBody } from '@fieldchart/schema/api';
import { timerEvents, visits } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';
import { rowFromJson, runPrepared } from '../../db/one-statement.ts';
import { Invalid } from '../../errors.ts';
import type { AuditContext, AuditLog } from '../audit/audit-log.ts';
import { applyTimerEvents, deriveEvv, timerFactsOf, type TimerEventType, type TimerFact } from '@fieldchart/schema/rules';
import { isUuid } from '../ids.ts';
import { recordsetShape } from '../../db/recordset.ts';
import { visitNotFound } from './visit-records.ts';

export type TimerEventsInput = z.infer<typeof timerEventsBody>;

/** A visit's new events; the visit is the statement's own. */
const EVENT_ROWS = recordsetShape(timerEvents, ['eventType', 'eventTime', 'latitude', 'longitude', 'accuracy']);

/** A stored event as the rules take it (its type was checked when it was written). */
export const storedTimerFact = (s: Pick<typeof timerEvents.$inferSelect, 'eventType' | 'eventTime' | 'latitude' | 'longitude' | 'accuracy'>): TimerFact => ({
  eventType: s.eventType as TimerEventType,
  eventTime: s.eventTime,
  latitude: s.latitude,
  longitude: s.longitude,
  accuracy: s.accuracy,
});

export interface TimerEventsOutcome {
  readonly recorded: number;
  readonly replayed: number;
  readonly status: string;
}

/** Optimistic tries before a batch falls back to locking the visit for its whole transaction. */
const OPTIMISTIC_TRIES = 3;

type VisitWithEvents = { v: Record<string, unknown>; rv: string; events: Array<Record<string, unknown>> };

export interface TimerEventsDeps {
  readonly db: Db;
  readonly clock: Clock;
  readonly audit: AuditLog;
  /**
   * Runs between an optimistic try's read and its write: where another writer's change makes
   * the try lose its race. For tests of the fallback (test/server/visits/timer-events-fallback.test.ts).
   */
  readonly beforeOptimisticWrite?: () => Promise<void>;
}

export function createTimerEvents(deps: TimerEventsDeps) {
  const { clock, audit } = deps;

  const visitWithEvents = (lock: boolean, visitId: string, ownerId: string) =>
    sql`select json_build_object('v', to_json(v), 'rv', v.row_version::text,
        'events', (select coalesce(json_agg(to_json(e)), '[]') from timer_events e where e.visit_id = v.id and e.deleted_at is null)) as r
      from visits v where v.id = ${visitId}::uuid and v.owner_id = ${ownerId}::uuid and v.deleted_at is null${lock ? sql` for update` : sql``}`;

  /** The stored sequence and what `incoming` adds to it; an invalid batch is refused here. */
  function apply(row: VisitWithEvents, incoming: TimerFact[]) {
    const visit = rowFromJson(visits, row.v);
    const stored = row.events.map((e) => rowFromJson(timerEvents, e));
    const result = applyTimerEvents(
      stored.map(storedTimerFact),
      incoming,
    );
    if (!result.ok) {
      throw new Invalid(`Event ${result.index}: ${result.message}`, { [`events.${result.index}`]: [result.message] }, 'invalid_timer_sequence');
    }
    const arrived = result.events.some((e) => e.eventType === 'arrive');
    const status = visit.status === 'scheduled' && arrived ? 'in_progress' : visit.status;
    return { visit, result, status };
  }

  return {
    async record(ctx: AuditContext, ownerId: string, input: TimerEventsInput): Promise<TimerEventsOutcome> {
      const incoming = timerFactsOf(input.events);
      const entry = { action: 'update', resourceType: 'visit_timer', resourceId: input.schedule_uuid } as const;

      /**
       * Read without a lock, then write in one statement that applies only if the visit's
       * row_version is still the one read (every change to the visit bumps it, and a batch
       * that adds events changes the visit). No transaction stays open across round trips,
       * so the audit chain's head (locked by the audit insert until commit) is held for one
       * statement rather than to a COMMIT the client sends later. Null: the visit changed
       * in between; read again.
       */
      async function optimistic(): Promise<TimerEventsOutcome | null> {
        const [row] = await runPrepared<{ r: VisitWithEvents }>(deps.db, 'timer_visit_read', visitWithEvents(false, input.schedule_uuid, ownerId));
        if (!row) throw visitNotFound();
        const { visit, result, status } = apply(row.r, incoming);
        const done = audit.insertFor(ctx, { ...entry, details: { added: result.added.length, replayed: result.replayed } }, 'success');
        const now = clock.now();
        const evv = deps.db
          .update(visits)
          .set({ ...deriveEvv(result.events), status, updatedAt: now })
          .where(sql`${visits.id} in (select id from v)`);
        await deps.beforeOptimisticWrite?.();
        const [applied] = await runPrepared<{ n: number }>(
          deps.db,
          'timer_store_if_unchanged',
          sql`with v as (select id from ${visits} where id = ${visit.id}::uuid and row_version = ${row.r.rv}::bigint and deleted_at is null for update),
            added as (insert into ${timerEvents} (visit_id, ${EVENT_ROWS.columns}, owner_id, created_at)
              select v.id, ${EVENT_ROWS.values}, ${ownerId}::uuid, ${now.toISOString()}::timestamptz
              from v, ${EVENT_ROWS.from(result.added)}
              on conflict do nothing),
            evv as ${result.added.length > 0 ? evv : sql`(select 1)`},
            audit as (${done} from v)
            select count(*)::int as n from v`,
        );
        if (!applied || applied.n === 0) return null;
        return { recorded: result.added.length, replayed: result.replayed, status: result.added.length > 0 ? status : visit.status };
      }

      /** The visit locked with its stored events for the transaction: a batch that keeps losing the race. */
      async function locked(): Promise<TimerEventsOutcome> {
        return deps.db.transaction(async (tx) => {
          const [row] = await runPrepared<{ r: VisitWithEvents }>(tx, 'timer_visit_lock', visitWithEvents(true, input.schedule_uuid, ownerId));
          if (!row) throw visitNotFound();
          const { visit, result, status } = apply(row.r, incoming);
          const done = audit.insertFor(ctx, { ...entry, details: { added: result.added.length, replayed: result.replayed } }, 'success');
          if (result.added.length === 0) {
            await tx.execute(done);
            return { recorded: 0, replayed: result.replayed, status: visit.status };
          }
          const now = clock.now();
          const added = tx
            .insert(timerEvents)
            .values(result.added.map((e) => ({ visitId: visit.id, ownerId, ...e, createdAt: now })))
            .onConflictDoNothing();
          const evv = tx
            .update(visits)
            .set({ ...deriveEvv(result.events), status, updatedAt: now })
            .where(eq(visits.id, visit.id));
          await runPrepared(tx, 'timer_store', sql`with added as ${added}, evv as ${evv}, audit as (${done}) select 1 as done`);
          return { recorded: result.added.length, replayed: result.replayed, status };
        });
      }

      try {
        if (!isUuid(input.schedule_uuid)) throw visitNotFound();
        for (let attempt = 0; attempt < OPTIMISTIC_TRIES; attempt++) {
          const outcome = await optimistic();
          if (outcome) return outcome;
        }
        return await locked();
      } catch (err) {
        // As audit.around: a refused or failed batch is recorded after its rollback.
        await audit.failed(ctx, entry, err);
        throw err;
      }
    },
  };
}
