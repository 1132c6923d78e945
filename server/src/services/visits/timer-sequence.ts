/**
 * The visit timer as pure functions: which incoming events are new, whether the sequence
 * start_travel → arrive → start_documentation → complete still holds, and the EVV record
 * derived from it. No database, no clock: the service feeds stored rows in.
 */

import { TIMER_EVENT_TYPES } from '@fieldchart/schema/api';

/** The timer's steps in order: the API's event types are listed in sequence order. */
export const TIMER_SEQUENCE = TIMER_EVENT_TYPES;
export type TimerEventType = (typeof TIMER_SEQUENCE)[number];

export interface TimerFact {
  readonly eventType: TimerEventType;
  readonly eventTime: Date;
  readonly latitude: number | null;
  readonly longitude: number | null;
  readonly accuracy: number | null;
}

export type SequenceResult<E extends TimerFact> =
  | { readonly ok: true; readonly added: E[]; readonly replayed: number; readonly events: TimerFact[] }
  | { readonly ok: false; readonly index: number; readonly message: string };

const rank = (t: TimerEventType) => TIMER_SEQUENCE.indexOf(t);

/**
 * Checks `incoming` against `stored` (already valid). The incoming batch is taken in time
 * order (ties in sequence order), so a device may send it in any array order; an error names
 * the event's index in the array as sent. A stored or earlier-in-batch event with the same
 * type and time is the same event (replayed, not added); the same type at another time, a
 * step whose predecessor is missing, or a time earlier than the predecessor's is an error.
 * All-or-nothing: on error nothing is added.
 */
export function applyTimerEvents<E extends TimerFact>(stored: readonly TimerFact[], incoming: readonly E[]): SequenceResult<E> {
  const byType = new Map<TimerEventType, TimerFact>();
  for (const e of stored) byType.set(e.eventType, e);
  const order = incoming
    .map((event, index) => ({ event, index }))
    .sort((a, b) => a.event.eventTime.getTime() - b.event.eventTime.getTime() || rank(a.event.eventType) - rank(b.event.eventType) || a.index - b.index);
  const added: E[] = [];
  let replayed = 0;
  for (const { event, index } of order) {
    const time = event.eventTime.getTime();
    if (Number.isNaN(time)) return { ok: false, index, message: 'event_time is not a valid time' };
    const existing = byType.get(event.eventType);
    if (existing) {
      if (existing.eventTime.getTime() === time) {
        replayed++;
        continue;
      }
      return { ok: false, index, message: `${event.eventType} is already recorded at ${existing.eventTime.toISOString()}` };
    }
    const r = rank(event.eventType);
    const previousType = r > 0 ? TIMER_SEQUENCE[r - 1] : undefined;
    if (previousType) {
      const previous = byType.get(previousType);
      if (!previous) return { ok: false, index, message: `${event.eventType} must follow ${previousType}` };
      if (time < previous.eventTime.getTime()) {
        return { ok: false, index, message: `${event.eventType} is earlier than ${previousType} (${previous.eventTime.toISOString()})` };
      }
    }
    byType.set(event.eventType, event);
    added.push(event);
  }
  const events = TIMER_SEQUENCE.flatMap((t) => {
    const e = byType.get(t);
    return e ? [e] : [];
  });
  return { ok: true, added, replayed, events };
}

export interface EvvDerivation {
  readonly travelStartedAt: Date | null;
  readonly arrivedAt: Date | null;
  readonly arrivalLat: number | null;
  readonly arrivalLng: number | null;
  readonly arrivalAccuracy: number | null;
  readonly documentationStartedAt: Date | null;
  readonly departedAt: Date | null;
  readonly departureLat: number | null;
  readonly departureLng: number | null;
  readonly departureAccuracy: number | null;
  /** start_travel → arrive. */
  readonly driveSeconds: number | null;
  /** arrive → complete. */
  readonly onsiteSeconds: number | null;
  /** start_documentation → complete. */
  readonly documentationSeconds: number | null;
}

const seconds = (from: TimerFact | undefined, to: TimerFact | undefined) =>
  from && to ? Math.round((to.eventTime.getTime() - from.eventTime.getTime()) / 1000) : null;

/** The EVV record of a valid sequence: arrival is `arrive`, departure is `complete`. */
export function deriveEvv(events: readonly TimerFact[]): EvvDerivation {
  const get = (t: TimerEventType) => events.find((e) => e.eventType === t);
  const travel = get('start_travel');
  const arrive = get('arrive');
  const documentation = get('start_documentation');
  const complete = get('complete');
  return {
    travelStartedAt: travel?.eventTime ?? null,
    arrivedAt: arrive?.eventTime ?? null,
    arrivalLat: arrive?.latitude ?? null,
    arrivalLng: arrive?.longitude ?? null,
    arrivalAccuracy: arrive?.accuracy ?? null,
    documentationStartedAt: documentation?.eventTime ?? null,
    departedAt: complete?.eventTime ?? null,
    departureLat: complete?.latitude ?? null,
    departureLng: complete?.longitude ?? null,
    departureAccuracy: complete?.accuracy ?? null,
    driveSeconds: seconds(travel, arrive),
    onsiteSeconds: seconds(arrive, complete),
    documentationSeconds: seconds(documentation, complete),
  };
}
