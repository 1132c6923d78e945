/**
 * The visit timer as pure functions, one copy for the server (which stores the events) and the
 * device (which refuses a batch the server would reject, and shows the EVV record before the
 * feed brings it back): which incoming events are new, whether the sequence
 * start_travel → arrive → start_documentation → complete still holds, and which events the EVV
 * record is derived from. No database, no clock: callers feed the events in.
 */
import { TIMER_EVENT_TYPES } from '../api/visits.ts';

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

/** An event as a request names it (REST's body, a sync mutation's arguments). */
export interface TimerEventRequest {
  readonly event_type: TimerEventType;
  readonly event_time: string;
  readonly latitude: number | null;
  readonly longitude: number | null;
  readonly accuracy: number | null;
}

/**
 * A request's events as the rules take them, at millisecond precision: an event's identity
 * (type and time) is compared the way it is stored.
 */
export function timerFactsOf(events: readonly TimerEventRequest[]): TimerFact[] {
  return events.map((e) => ({ eventType: e.event_type, eventTime: new Date(e.event_time), latitude: e.latitude, longitude: e.longitude, accuracy: e.accuracy }));
}

/** What the sequence rule needs of an event. */
export interface TimedStep {
  readonly eventType: TimerEventType;
  readonly eventTime: Date;
}

export type SequenceResult<E extends TimedStep, S extends TimedStep = TimedStep> =
  | { readonly ok: true; readonly added: E[]; readonly replayed: number; readonly events: (E | S)[] }
  | { readonly ok: false; readonly index: number; readonly message: string };

/** Position of a step in the sequence (-1 for a type that is not one). */
export const timerRank = (t: string): number => TIMER_SEQUENCE.indexOf(t as TimerEventType);

/**
 * Checks `incoming` against `stored` (already valid). The incoming batch is taken in time
 * order (ties in sequence order), so a device may send it in any array order; an error names
 * the event's index in the array as sent. A stored or earlier-in-batch event with the same
 * type and time is the same event (replayed, not added); the same type at another time, a
 * step whose predecessor is missing, or a time earlier than the predecessor's is an error.
 * All-or-nothing: on error nothing is added.
 */
export function applyTimerEvents<E extends TimedStep, S extends TimedStep = TimedStep>(
  stored: readonly S[],
  incoming: readonly E[],
): SequenceResult<E, S> {
  const byType = new Map<TimerEventType, E | S>();
  for (const e of stored) byType.set(e.eventType, e);
  const order = incoming
    .map((event, index) => ({ event, index }))
    .sort(
      (a, b) =>
        a.event.eventTime.getTime() - b.event.eventTime.getTime() ||
        timerRank(a.event.eventType) - timerRank(b.event.eventType) ||
        a.index - b.index,
    );
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
    const r = timerRank(event.eventType);
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

/** Events in time order, ties in sequence order (the order the sequence rule takes them in). */
export function sortTimerEvents<E>(events: readonly E[], time: (e: E) => number, type: (e: E) => string): E[] {
  return [...events].sort((a, b) => time(a) - time(b) || timerRank(type(a)) - timerRank(type(b)));
}

/**
 * The events the EVV record is made of: travel starts at `start_travel`, arrival is `arrive`,
 * documentation starts at `start_documentation`, departure is `complete`. Drive time is
 * travel → arrival, on-site time arrival → departure, documentation time documentation →
 * departure.
 */
export interface EvvSteps<E> {
  readonly travel: E | undefined;
  readonly arrive: E | undefined;
  readonly documentation: E | undefined;
  readonly complete: E | undefined;
}

export function evvSteps<E>(events: readonly E[], type: (e: E) => string): EvvSteps<E> {
  const get = (t: TimerEventType) => events.find((e) => type(e) === t);
  return { travel: get('start_travel'), arrive: get('arrive'), documentation: get('start_documentation'), complete: get('complete') };
}

/** Whole seconds from one instant (ms) to another; null when either is missing. */
export const elapsedSeconds = (from: number | undefined, to: number | undefined): number | null =>
  from === undefined || to === undefined ? null : Math.round((to - from) / 1000);

/** Minutes to one decimal, as the API shows drive/on-site/documentation times. */
export const minutesOf = (seconds: number | null): number | null => (seconds === null ? null : round(seconds / 60, 1));

/** Rounds half away from float noise (1.005 → 1.01). */
export function round(n: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round((n + Number.EPSILON) * f) / f;
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

/** The EVV record of a valid sequence, in the server's stored shape. */
export function deriveEvv(events: readonly TimerFact[]): EvvDerivation {
  const { travel, arrive, documentation, complete } = evvSteps(events, (e) => e.eventType);
  const ms = (e: TimerFact | undefined) => e?.eventTime.getTime();
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
    driveSeconds: elapsedSeconds(ms(travel), ms(arrive)),
    onsiteSeconds: elapsedSeconds(ms(arrive), ms(complete)),
    documentationSeconds: elapsedSeconds(ms(documentation), ms(complete)),
  };
}
