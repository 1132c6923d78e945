/**
 * The EVV record and status a visit shows once the device adds timer events the server has not
 * seen yet: the same derivation the server applies (start_travel → arrive → start_documentation
 * → complete; arrival is `arrive`, departure is `complete`), so the optimistic view matches
 * what the feed brings back.
 */
import { TIMER_EVENT_TYPES } from '@fieldchart/schema/api';
import type { TimerEventRow, VisitRow } from '@fieldchart/schema/sync';

type Evv = VisitRow['evv'];

const rank = (t: string) => TIMER_EVENT_TYPES.indexOf(t as (typeof TIMER_EVENT_TYPES)[number]);

/** Events in time order, ties in sequence order (the server's order). */
export function sortEvents<E extends { event_type: string; event_time: string }>(events: readonly E[]): E[] {
  return [...events].sort((a, b) => Date.parse(a.event_time) - Date.parse(b.event_time) || rank(a.event_type) - rank(b.event_type));
}

const minutes = (from: TimerEventRow | undefined, to: TimerEventRow | undefined): number | null => {
  if (!from || !to) return null;
  const seconds = Math.round((Date.parse(to.event_time) - Date.parse(from.event_time)) / 1000);
  return Math.round((seconds / 60 + Number.EPSILON) * 10) / 10;
};

const place = (e: TimerEventRow | undefined) =>
  e && e.latitude !== null && e.longitude !== null ? { latitude: e.latitude, longitude: e.longitude, accuracy: e.accuracy } : null;

export function deriveEvv(events: readonly TimerEventRow[]): Evv {
  const get = (t: string) => events.find((e) => e.event_type === t);
  const travel = get('start_travel');
  const arrive = get('arrive');
  const documentation = get('start_documentation');
  const complete = get('complete');
  return {
    travel_started_at: travel?.event_time ?? null,
    arrived_at: arrive?.event_time ?? null,
    arrival_location: place(arrive),
    documentation_started_at: documentation?.event_time ?? null,
    departed_at: complete?.event_time ?? null,
    departure_location: place(complete),
    drive_minutes: minutes(travel, arrive),
    onsite_minutes: minutes(arrive, complete),
    documentation_minutes: minutes(documentation, complete),
  };
}

/** An EVV record with nothing recorded. */
export const EMPTY_EVV: Evv = deriveEvv([]);

/** Minutes a visit takes when scheduled without a duration (the server's defaults). */
export const DURATION_BY_TYPE: Readonly<Record<string, number>> = {
  evaluation: 75,
  routine: 45,
  reassessment: 60,
  discharge: 60,
  supervisory: 30,
};
