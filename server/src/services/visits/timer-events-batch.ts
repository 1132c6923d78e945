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
import { applyTimerEvents, deriveEvv, timerFactsOf, type TimerFact } from '@fieldchart/schema/rules';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';
import { allSettled, recordset, settled, uuidIn, type BatchPlan, type Refused } from '../batch-plan.ts';
import { storedTimerFact, type TimerEventsInput, type TimerEventsOutcome } from './timer-events.ts';

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
            insert into ${timerEvents} (visit_id, owner_id, event_type, event_time, latitude, longitude, accuracy, created_at)
            select x.visit_id, ${ownerId}::uuid, x.event_type, x.event_time, x.latitude, x.longitude, x.accuracy, ${at}::timestamptz
            from jsonb_to_recordset(${recordset(
              added.map((e) => ({ visit_id: e.visitId, event_type: e.eventType, event_time: e.eventTime.toISOString(), latitude: e.latitude, longitude: e.longitude, accuracy: e.accuracy })),
            )}::jsonb) as x(visit_id uuid, event_type text, event_time timestamptz, latitude float8, longitude float8, accuracy float8)
            on conflict do nothing`);
          const touched = [...state.entries()].filter(([, v]) => v.touched);
          const rows = touched.map(([id, v]) => {
            const evv = deriveEvv(v.events);
            const iso = (d: Date | null) => d?.toISOString() ?? null;
            return {
              id,
              status: v.status,
              travel_started_at: iso(evv.travelStartedAt),
              arrived_at: iso(evv.arrivedAt),
              arrival_lat: evv.arrivalLat,
              arrival_lng: evv.arrivalLng,
              arrival_accuracy: evv.arrivalAccuracy,
              documentation_started_at: iso(evv.documentationStartedAt),
              departed_at: iso(evv.departedAt),
              departure_lat: evv.departureLat,
              departure_lng: evv.departureLng,
              departure_accuracy: evv.departureAccuracy,
              drive_seconds: evv.driveSeconds,
              onsite_seconds: evv.onsiteSeconds,
              documentation_seconds: evv.documentationSeconds,
            };
          });
          const updated = db.execute(sql`
            update ${visits} as v set
              status = x.status, travel_started_at = x.travel_started_at, arrived_at = x.arrived_at,
              arrival_lat = x.arrival_lat, arrival_lng = x.arrival_lng, arrival_accuracy = x.arrival_accuracy,
              documentation_started_at = x.documentation_started_at, departed_at = x.departed_at,
              departure_lat = x.departure_lat, departure_lng = x.departure_lng, departure_accuracy = x.departure_accuracy,
              drive_seconds = x.drive_seconds, onsite_seconds = x.onsite_seconds, documentation_seconds = x.documentation_seconds,
              updated_at = ${at}::timestamptz
            from jsonb_to_recordset(${recordset(rows)}::jsonb) as x(
              id uuid, status text, travel_started_at timestamptz, arrived_at timestamptz, arrival_lat float8, arrival_lng float8,
              arrival_accuracy float8, documentation_started_at timestamptz, departed_at timestamptz, departure_lat float8,
              departure_lng float8, departure_accuracy float8, drive_seconds integer, onsite_seconds integer, documentation_seconds integer)
            where v.id = x.id`);
          await settled([inserted, updated]);
        },
      };
    },
  };
}

export type TimerEventsBatch = ReturnType<typeof createTimerEventsBatch>;
