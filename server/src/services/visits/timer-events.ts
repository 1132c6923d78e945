/** Storing timer events and re-deriving the visit's EVV record from the whole sequence. */
import { and, eq, isNull } from 'drizzle-orm';
import type * as z from 'zod';
import type { timerEventsBody } from '@fieldchart/schema/api';
import { timerEvents, visits } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import { Invalid } from '../../errors.ts';
import type { AuditContext, AuditLog } from '../audit/audit-log.ts';
import { applyTimerEvents, deriveEvv, type TimerEventType, type TimerFact } from '@fieldchart/schema/rules';
import { findOwnedVisit } from './visit-records.ts';

export type TimerEventsInput = z.infer<typeof timerEventsBody>;

export interface TimerEventsOutcome {
  readonly recorded: number;
  readonly replayed: number;
  readonly status: string;
}

export function createTimerEvents(deps: { clock: Clock; audit: AuditLog }) {
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
      return audit.around(ctx, { action: 'update', resourceType: 'visit_timer', resourceId: input.schedule_uuid }, async (tx, note) => {
        // The row lock serialises concurrent batches for one visit.
        const visit = await findOwnedVisit(tx, ownerId, input.schedule_uuid, { forUpdate: true });
        const stored = await tx
          .select()
          .from(timerEvents)
          .where(and(eq(timerEvents.visitId, visit.id), isNull(timerEvents.deletedAt)));
        const result = applyTimerEvents(
          stored.map((s) => ({ eventType: s.eventType as TimerEventType, eventTime: s.eventTime, latitude: s.latitude, longitude: s.longitude, accuracy: s.accuracy })),
          incoming,
        );
        if (!result.ok) {
          throw new Invalid(`Event ${result.index}: ${result.message}`, { [`events.${result.index}`]: [result.message] }, 'invalid_timer_sequence');
        }
        note({ details: { added: result.added.length, replayed: result.replayed } });
        if (result.added.length === 0) return { recorded: 0, replayed: result.replayed, status: visit.status };
        const now = clock.now();
        await tx
          .insert(timerEvents)
          .values(result.added.map((e) => ({ visitId: visit.id, ownerId, ...e, createdAt: now })))
          .onConflictDoNothing();
        const arrived = result.events.some((e) => e.eventType === 'arrive');
        const status = visit.status === 'scheduled' && arrived ? 'in_progress' : visit.status;
        await tx
          .update(visits)
          .set({ ...deriveEvv(result.events), status, updatedAt: now })
          .where(eq(visits.id, visit.id));
        return { recorded: result.added.length, replayed: result.replayed, status };
      });
    },
  };
}
