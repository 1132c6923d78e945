/**
 * The EVV record a visit shows once the device adds timer events the server has not seen yet,
 * in the feed's row shape. Which events make the record and how times are counted is the
 * shared rule (`@fieldchart/schema/rules`), so the optimistic view matches what the feed
 * brings back.
 */
import { elapsedSeconds, evvSteps, minutesOf, sortTimerEvents } from '@fieldchart/schema/rules';
import type { TimerEventRow, VisitRow } from '@fieldchart/schema/sync';

type Evv = VisitRow['evv'];

/** Events in time order, ties in sequence order (the server's order). */
export function sortEvents<E extends { event_type: string; event_time: string }>(events: readonly E[]): E[] {
  return sortTimerEvents(events, (e) => Date.parse(e.event_time), (e) => e.event_type);
}

const minutes = (from: TimerEventRow | undefined, to: TimerEventRow | undefined): number | null =>
  minutesOf(elapsedSeconds(from && Date.parse(from.event_time), to && Date.parse(to.event_time)));

const place = (e: TimerEventRow | undefined) =>
  e && e.latitude !== null && e.longitude !== null ? { latitude: e.latitude, longitude: e.longitude, accuracy: e.accuracy } : null;

export function deriveEvv(events: readonly TimerEventRow[]): Evv {
  const { travel, arrive, documentation, complete } = evvSteps(events, (e) => e.event_type);
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
