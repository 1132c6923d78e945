/**
 * Timer events of many visits at once (the sync channel's queued `visit.timer_events`): the
 * same rules as `timer-events.ts` — the visit must be the caller's, the shared sequence rule
 * decides what is new — checked in memory in order, each input seeing what the ones before it
 * added; then one INSERT of every new event and one UPDATE of every touched visit's EVV
 * record and status. No plan when an input would be refused, only where (`Refused`): the
 * caller applies that one on its own, and each refusal is its own.
 */
import { and, isNull, eq, sql } from 'drizzle-orm';
import { timerEvents, visits } from '@fieldchart/schema/db';
import { applyTimerEvents, deriveEvv, timerFactsOf, type EvvDerivation, type TimerFact } from '@fieldchart/schema/rules';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';
import { recordsetShape } from '../../db/recordset.ts';
import { allSettled, settled, uuidIn, type BatchPlan, type Refused } from '../batch-plan.ts';
import { storedTimerFact, type TimerEventsInput, type TimerEventsOutcome } from './timer-events.ts';

const EVENT_ROWS = recordsetShape(timerEvents, ['visitId', 'eventType', 'eventTime', 'latitude', 'longitude', 'accuracy']);
/** A visit's status and EVV record: every field `deriveEvv` gives, as the one-at-a-time path sets them. */
const EVV_ROWS = recordsetShape(visits, ['id', 'status', ...(Object.keys(deriveEvv([])) as Array<keyof EvvDerivation>)], { match: ['id'] });

interface VisitState {
  status: string;
  events: TimerFact[];
  touched: boolean;
}

export function createTimerEventsBatch(deps: { clock: Clock }) {
  return {
    async plan(tx: Db, ownerId: string, inputs: readonly TimerEventsInput[]): Promise<BatchPlan<TimerEventsOutcome> | Refused> {
      if (inputs.length === 0) return { results: [], audits: [], write: async () => {} };
      const ids = [...new Set(inputs.map((i) => i.schedule_uuid))];
      // Locked in id order: two batches touching the same visits cannot deadlock. The events
      // are read by the next statement, issued with it (pipelined): it runs once the lock is held.
      const [owned, stored] = await allSettled([
        tx
          .select({ id: visits.id, status: visits.status })
          .from(visits)
          .where(and(uuidIn(visits.id, ids), eq(visits.ownerId, ownerId), isNull(visits.deletedAt)))
          .orderBy(visits.id)
          .for('update')
          .execute(),
        tx
          .select()
          .from(timerEvents)
          .where(and(uuidIn(timerEvents.visitId, ids), isNull(timerEvents.deletedAt)))
          .execute(),
      ]);
      const state = new Map<string, VisitState>(owned.map((v) => [v.id, { status: v.status, events: [], touched: false }]));
      // A visit that is not the clinician's (or not there): the first input naming it is refused.
      if (owned.length !== ids.length) return { refusedAt: inputs.findIndex((i) => !state.has(i.schedule_uuid)) };
      for (const s of stored) {
        state.get(s.visitId)?.events.push(storedTimerFact(s));
      }
      const now = deps.clock.now();
      const added: Array<TimerFact & { visitId: string }> = [];
      const results: TimerEventsOutcome[] = [];
      const audits: BatchPlan<TimerEventsOutcome>['audits'][number][] = [];
      for (const [n, input] of inputs.entries()) {
        const visit = state.get(input.schedule_uuid) as VisitState;
        const incoming = timerFactsOf(input.events);
        const result = applyTimerEvents(visit.events, incoming);
        if (!result.ok) return { refusedAt: n };
        audits.push({ action: 'update', resourceType: 'visit_timer', resourceId: input.schedule_uuid, details: { added: result.added.length, replayed: result.replayed } });
        if (result.added.length > 0) {
          for (const e of result.added) added.push({ ...e, visitId: input.schedule_uuid });
          visit.events = result.events;
          if (visit.status === 'scheduled' && result.events.some((e) => e.eventType === 'arrive')) visit.status = 'in_progress';
          visit.touched = true;
        }
        results.push({ recorded: result.added.length, replayed: result.replayed, status: visit.status });
      }
      return {
        results,
        audits,
        async write(db) {
          if (added.length === 0) return;
          const at = now.toISOString();
          const inserted = db.execute(sql`
            insert into ${timerEvents} (${EVENT_ROWS.columns}, owner_id, created_at)
            select ${EVENT_ROWS.values}, ${ownerId}::uuid, ${at}::timestamptz
            from ${EVENT_ROWS.from(added)}
            on conflict do nothing`);
          const touched = [...state.entries()].filter(([, v]) => v.touched);
          const updated = db.execute(sql`
            update ${visits} as v set ${EVV_ROWS.assignments}, updated_at = ${at}::timestamptz
            from ${EVV_ROWS.from(touched.map(([id, v]) => ({ id, status: v.status, ...deriveEvv(v.events) })))}
            where v.id = x."id"`);
          await settled([inserted, updated]);
        },
      };
    },
  };
}

export type TimerEventsBatch = ReturnType<typeof createTimerEventsBatch>;
