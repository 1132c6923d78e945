/**
 * From a travel matrix to the day's suggestion (CONTRACT.md "route suggestion"): the optimal
 * order, suggested start times (visit durations + buffers + drive legs), per-leg and total drive
 * minutes and miles, and the savings against the current order. Shared by the server and the
 * offline client so both answer the same for the same inputs.
 */
import { MAX_EXACT_VISITS, solveRoute, type RouteProblem } from './solver.ts';

export interface PlanVisit {
  readonly id: string;
  /** Current start, HH:MM (wall clock). */
  readonly startTime: string;
  readonly durationMinutes: number;
}

export interface PlanInput {
  /** The day's visits in their current order (by start time). */
  readonly visits: readonly PlanVisit[];
  /**
   * Travel matrices over the visits, in the order of `visits`, followed by the home base as the
   * last point when `home` is true.
   */
  readonly minutes: ReadonlyArray<ReadonlyArray<number>>;
  readonly miles: ReadonlyArray<ReadonlyArray<number>>;
  /** The home base is the last point of the matrices: the day starts and ends there. */
  readonly home: boolean;
  /** Keep the current first visit first, at its current start time. */
  readonly lockFirst: boolean;
  /** HH:MM: when the day starts (leaving the home base, or at the first visit without one). */
  readonly dayStart: string;
  readonly bufferMinutes: number;
}

export interface PlannedVisit {
  readonly schedule_uuid: string;
  readonly suggested_start_time: string;
  /** The leg that reaches this visit (from the home base or the previous visit). */
  readonly drive_minutes: number;
  readonly drive_miles: number;
}

export interface RoutePlan {
  readonly visits: PlannedVisit[];
  /** All legs, including the drive back to the home base. */
  readonly total_drive_minutes: number;
  readonly total_miles: number;
  /** Current order minus suggested order (miles can be negative: the plan minimises time). */
  readonly savings: { readonly minutes: number; readonly miles: number };
}

export type PlanOutcome =
  | { readonly ok: true; readonly plan: RoutePlan }
  | { readonly ok: false; readonly reason: 'too_many_visits' | 'day_overflow'; readonly message: string };

const MINUTES_PER_DAY = 24 * 60;

export function parseHhmm(t: string): number {
  const m = /^(\d{2}):(\d{2})$/.exec(t);
  if (!m) throw new RangeError(`not a time: ${t}`);
  return Number(m[1]) * 60 + Number(m[2]);
}

export function formatHhmm(minutes: number): string {
  return `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}

const round1 = (x: number) => Math.round(x * 10) / 10;
const round2 = (x: number) => Math.round(x * 100) / 100;

/** Legs of an order: into each visit, then home. */
function legs(input: PlanInput, order: readonly number[]) {
  const n = input.visits.length;
  const into = order.map((v, k) => {
    if (k === 0) return input.home ? { minutes: input.minutes[n]![v]!, miles: input.miles[n]![v]! } : { minutes: 0, miles: 0 };
    const from = order[k - 1]!;
    return { minutes: input.minutes[from]![v]!, miles: input.miles[from]![v]! };
  });
  const last = order[order.length - 1];
  const back = input.home && last !== undefined ? { minutes: input.minutes[last]![n]!, miles: input.miles[last]![n]! } : { minutes: 0, miles: 0 };
  const minutes = into.reduce((s, l) => s + l.minutes, back.minutes);
  const miles = into.reduce((s, l) => s + l.miles, back.miles);
  return { into, minutes, miles };
}

/** The optimal plan for the day, or why there is none. */
export function planRoute(input: PlanInput): PlanOutcome {
  const n = input.visits.length;
  if (n > MAX_EXACT_VISITS) {
    return { ok: false, reason: 'too_many_visits', message: `at most ${MAX_EXACT_VISITS} visits a day can be optimised, this day has ${n}` };
  }
  const cost = input.visits.map((_, i) => input.visits.map((__, j) => (i === j ? 0 : input.minutes[i]![j]!)));
  const problem: RouteProblem = {
    cost,
    start: input.home ? input.visits.map((_, j) => input.minutes[n]![j]!) : undefined,
    end: input.home ? input.visits.map((_, j) => input.minutes[j]![n]!) : undefined,
    first: input.lockFirst && n > 0 ? 0 : undefined,
  };
  const { order } = solveRoute(problem);
  const current = input.visits.map((_, i) => i);
  const chosen = legs(input, order);
  const before = legs(input, current);
  // Times: whole minutes; a drive leg is rounded up so the suggestion is never early.
  let at: number;
  if (input.lockFirst && n > 0) at = parseHhmm(input.visits[0]!.startTime);
  else at = parseHhmm(input.dayStart) + (input.home ? Math.ceil(chosen.into[0]?.minutes ?? 0) : 0);
  const planned: PlannedVisit[] = [];
  for (let k = 0; k < order.length; k++) {
    const v = input.visits[order[k]!]!;
    if (k > 0) {
      const prev = input.visits[order[k - 1]!]!;
      at += prev.durationMinutes + input.bufferMinutes + Math.ceil(chosen.into[k]!.minutes);
    }
    if (at >= MINUTES_PER_DAY) {
      return { ok: false, reason: 'day_overflow', message: `the suggested order does not fit the day: visit ${v.id} would start after 23:59` };
    }
    planned.push({ schedule_uuid: v.id, suggested_start_time: formatHhmm(at), drive_minutes: round1(chosen.into[k]!.minutes), drive_miles: round2(chosen.into[k]!.miles) });
  }
  return {
    ok: true,
    plan: {
      visits: planned,
      total_drive_minutes: round1(chosen.minutes),
      total_miles: round2(chosen.miles),
      savings: { minutes: round1(before.minutes - chosen.minutes), miles: round2(before.miles - chosen.miles) },
    },
  };
}

