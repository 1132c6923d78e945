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
import { applyTimerEvents, deriveEvv, type TimerEventType, type TimerFact } from '@fieldchart/schema/rules';
import { isUuid } from '../ids.ts';
import { visitNotFound } from './visit-records.ts';

export type TimerEventsInput = z.infer<typeof timerEventsBody>;

export interface TimerEventsOutcome {
  readonly recorded: number;
  readonly replayed: number;
  readonly status: string;
}

export function createTimerEvents(deps: { db: Db; clock: Clock; audit: AuditLog }) {
  const { clock, audit } = deps;

  return {
    async record(ctx: AuditContext, ownerId: string, input: TimerEventsInput): Promise<TimerEventsOutcome> {
      const incoming: TimerFact[] = input.events.map((e) => ({
        eventType: e.event_type as TimerEventType,
        // Millisecond precision: the identity of an event is compared the way it is stored.
        eventTime: new Date(e.event_time),
        latitude: e.latitude,
        longitude: e.longitude,
        accuracy: e.accuracy,
      }));
      const entry = { action: 'update', resourceType: 'visit_timer', resourceId: input.schedule_uuid } as const;
      // Two statements in one transaction: the visit locked with its stored events (the row
      // lock serialises concurrent batches for one visit), then the new events, the visit's
      // EVV record and the audit row written together.
      try {
        return await deps.db.transaction(async (tx) => {
          if (!isUuid(input.schedule_uuid)) throw visitNotFound();
          const [row] = await runPrepared<{ r: { v: Record<string, unknown>; events: Array<Record<string, unknown>> } }>(
            tx,
            'timer_visit_lock',
            sql`select json_build_object('v', to_json(v),
                'events', (select coalesce(json_agg(to_json(e)), '[]') from timer_events e where e.visit_id = v.id and e.deleted_at is null)) as r
              from visits v where v.id = ${input.schedule_uuid}::uuid and v.owner_id = ${ownerId}::uuid and v.deleted_at is null for update`,
          );
          if (!row) throw visitNotFound();
          const visit = rowFromJson(visits, row.r.v);
          const stored = row.r.events.map((e) => rowFromJson(timerEvents, e));
          const result = applyTimerEvents(
            stored.map((s) => ({ eventType: s.eventType as TimerEventType, eventTime: s.eventTime, latitude: s.latitude, longitude: s.longitude, accuracy: s.accuracy })),
            incoming,
          );
          if (!result.ok) {
            throw new Invalid(`Event ${result.index}: ${result.message}`, { [`events.${result.index}`]: [result.message] }, 'invalid_timer_sequence');
          }
          const done = audit.insertFor(ctx, { ...entry, details: { added: result.added.length, replayed: result.replayed } }, 'success');
          if (result.added.length === 0) {
            await tx.execute(done);
            return { recorded: 0, replayed: result.replayed, status: visit.status };
          }
          const now = clock.now();
          const arrived = result.events.some((e) => e.eventType === 'arrive');
          const status = visit.status === 'scheduled' && arrived ? 'in_progress' : visit.status;
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
      } catch (err) {
        // As audit.around: a refused or failed batch is recorded after its rollback.
        await audit.failed(ctx, entry, err);
        throw err;
      }
    },
  };
}
