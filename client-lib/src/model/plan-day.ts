/**
 * Re-planning the day on the device (e.g. a visit was cancelled with no signal), with the same
 * solver and plan rules as POST /scheduling/optimize (@fieldchart/schema/routing).
 *
 * What the device knows offline, and so what it plans with:
 *  - the day's visits from its cache (start times, durations, addresses, patients);
 *  - where each patient is: learned from the `arrive` GPS fixes of the cached visits (the
 *    server's rule: the median of the 5 most recent fixes of ≤ 50 m accuracy, same patient and
 *    address), or coordinates the app passes in `locations` (e.g. its platform geocoder);
 *  - the scheduling policy only if the app passes it (it can keep the last
 *    `rest.scheduling.policy()` answer); otherwise no home base, 08:00, 10-minute buffers.
 * Travel times are always great-circle estimates (no routing engine offline), and the answer
 * says so (`routing_source: 'great_circle'`). The ZIP-centroid data set stays on the server:
 * a visit with no learned or given location is left out (`unrouted`).
 */
import {
  DEFAULT_GPS_ACCURACY_METERS,
  greatCircleMatrix,
  learnedLocation,
  normaliseAddress,
  planRoute,
  type GpsFix,
  type LatLng,
  type RoutePlan,
} from '@fieldchart/schema/routing';
import type { Visit } from './views.ts';

/** Options of `planDay`. */
export interface PlanDayOptions {
  /** Keep the current first visit first, at its current time. */
  readonly lockFirst?: boolean;
  /** Known coordinates by schedule uuid; they win over learned ones. */
  readonly locations?: Readonly<Record<string, LatLng>>;
  /** The scheduling policy's route members (from `rest.scheduling.policy()`). */
  readonly policy?: {
    readonly home_base_lat: number | null;
    readonly home_base_lng: number | null;
    readonly buffer_minutes: number;
    readonly day_start: string;
  };
}

/** A plan made on the device: the server's `RouteSuggestion` shape. */
export interface DayPlan extends RoutePlan {
  readonly routing_source: 'great_circle';
  /** Visits of the day the device cannot place. */
  readonly unrouted: string[];
}

export type PlanDayOutcome =
  | { readonly ok: true; readonly plan: DayPlan }
  | { readonly ok: false; readonly reason: 'too_few_geocodable_visits' | 'too_many_visits' | 'day_overflow'; readonly message: string };

const keyOf = (v: Pick<Visit, 'patient_uuid' | 'address'>) => (v.patient_uuid ? `${v.patient_uuid}\n${normaliseAddress(v.address ?? '')}` : null);

/** `day`: that date's non-cancelled visits by start time; `history`: every cached visit (for GPS fixes). */
export function planDayFrom(day: readonly Visit[], history: readonly Visit[], opts: PlanDayOptions = {}): PlanDayOutcome {
  const fixes = new Map<string, GpsFix[]>();
  for (const v of history) {
    const key = keyOf(v);
    if (!key) continue;
    for (const e of v.timer_events) {
      if (e.event_type !== 'arrive' || e.latitude === null || e.longitude === null) continue;
      const list = fixes.get(key) ?? [];
      list.push({ lat: e.latitude, lng: e.longitude, accuracy: e.accuracy, at: e.event_time });
      fixes.set(key, list);
    }
  }
  const placed: Array<{ visit: Visit; point: LatLng }> = [];
  const unrouted: string[] = [];
  for (const v of day) {
    const given = opts.locations?.[v.uuid];
    const key = keyOf(v);
    const point = given ?? (key ? learnedLocation(fixes.get(key) ?? [], DEFAULT_GPS_ACCURACY_METERS) : null);
    if (point) placed.push({ visit: v, point });
    else unrouted.push(v.uuid);
  }
  if (day.length > 12) return { ok: false, reason: 'too_many_visits', message: `at most 12 visits a day can be optimised, this day has ${day.length}` };
  if (placed.length < 3) return { ok: false, reason: 'too_few_geocodable_visits', message: `${placed.length} visit(s) with a known location; at least 3 are needed` };
  const p = opts.policy;
  const home = p && p.home_base_lat !== null && p.home_base_lng !== null ? { lat: p.home_base_lat, lng: p.home_base_lng } : null;
  const points = placed.map((x) => x.point);
  const m = greatCircleMatrix(home ? [...points, home] : points);
  const out = planRoute({
    visits: placed.map((x) => ({ id: x.visit.uuid, startTime: x.visit.start_time, durationMinutes: x.visit.duration_minutes })),
    minutes: m.minutes,
    miles: m.miles,
    home: home !== null,
    lockFirst: opts.lockFirst === true,
    dayStart: p?.day_start ?? '08:00',
    bufferMinutes: p?.buffer_minutes ?? 10,
  });
  if (!out.ok) return out;
  return { ok: true, plan: { ...out.plan, routing_source: 'great_circle', unrouted } };
}
