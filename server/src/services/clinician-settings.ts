import { eq, sql } from 'drizzle-orm';
import { clinicianSettings } from '@fieldchart/schema/db';
import type { Db } from '../db/database.ts';
import type { Clock } from '../clock.ts';

/** Until a clinician sets their own: typical US home-health per-visit rates, and the 2025 IRS mileage rate. */
export const DEFAULT_PAY_RATES: Readonly<Record<string, number>> = {
  evaluation: 130,
  routine: 80,
  reassessment: 95,
  discharge: 95,
  supervisory: 40,
};
export const DEFAULT_MILEAGE_RATE = 0.7;
export const DEFAULT_TIME_ZONE = 'America/New_York';

export interface ClinicianSettings {
  readonly time_zone: string;
  readonly pay_rates: Record<string, number>;
  readonly mileage_rate: number;
}

// Building an Intl.DateTimeFormat costs far more than using one (it showed in request
// profiles). Zones are validated IANA names, a bounded set, so one of each per zone is kept.
const dateFormats = new Map<string, Intl.DateTimeFormat>();
const instantFormats = new Map<string, Intl.DateTimeFormat>();
const timeFormats = new Map<string, Intl.DateTimeFormat>();

function formatFor(
  cache: Map<string, Intl.DateTimeFormat>,
  locale: string,
  timeZone: string,
  options: Intl.DateTimeFormatOptions,
): Intl.DateTimeFormat {
  let f = cache.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat(locale, { timeZone, ...options });
    cache.set(timeZone, f);
  }
  return f;
}

/** The calendar date (YYYY-MM-DD) at `now` in `timeZone`. */
export function localDate(now: Date, timeZone: string): string {
  const parts = formatFor(dateFormats, 'en-CA', timeZone, { year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(now);
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? '';
  return `${get('year')}-${get('month')}-${get('day')}`;
}

/** The wall-clock time (HH:MM, 00:00–23:59) at `now` in `timeZone`. */
export function localTime(now: Date, timeZone: string): string {
  const parts = formatFor(timeFormats, 'en-US', timeZone, { hourCycle: 'h23', hour: '2-digit', minute: '2-digit' }).formatToParts(now);
  const get = (t: string) => parts.find((p) => p.type === t)?.value ?? '';
  return `${get('hour')}:${get('minute')}`;
}

/**
 * Whether the wall-clock `date` `time` happens in `timeZone`: false inside a daylight-saving gap
 * (2026-03-08 02:30 in America/New_York), where `zonedInstant` lands on a different wall time.
 */
export function wallTimeExists(date: string, time: string, timeZone: string): boolean {
  const instant = zonedInstant(date, time, timeZone);
  return localDate(instant, timeZone) === date && localTime(instant, timeZone) === time;
}

/** The instant a wall-clock date and time in `timeZone` denote (DST-correct). */
export function zonedInstant(date: string, time: string, timeZone: string): Date {
  const naive = new Date(`${date}T${time}:00Z`);
  // The zone's offset at that moment, found by formatting the naive instant in the zone.
  const fmt = formatFor(instantFormats, 'en-US', timeZone, {
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
  const offsetAt = (d: Date) => {
    const p = Object.fromEntries(fmt.formatToParts(d).map((x) => [x.type, x.value]));
    const asUtc = Date.UTC(Number(p.year), Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute), Number(p.second));
    return asUtc - d.getTime();
  };
  const guess = new Date(naive.getTime() - offsetAt(naive));
  return new Date(naive.getTime() - offsetAt(guess));
}

/** A clinician's settings with the defaults merged in for whatever they never set. */
export async function readClinicianSettings(tx: Db, userId: string): Promise<ClinicianSettings> {
  const [row] = await tx.select().from(clinicianSettings).where(eq(clinicianSettings.userId, userId));
  return {
    time_zone: row?.timeZone ?? DEFAULT_TIME_ZONE,
    pay_rates: { ...DEFAULT_PAY_RATES, ...(row?.payRates ?? {}) },
    mileage_rate: row?.mileageRate ?? DEFAULT_MILEAGE_RATE,
  };
}

export function createClinicianSettings(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;
  return {
    get(userId: string, tx: Db = db): Promise<ClinicianSettings> {
      return readClinicianSettings(tx, userId);
    },

    async update(
      userId: string,
      input: { time_zone?: string | undefined; pay_rates?: Partial<Record<string, number>> | undefined; mileage_rate?: number | undefined },
    ): Promise<ClinicianSettings> {
      // Store only what was sent: defaults merge in at read time (`get`), so a later change of
      // DEFAULT_PAY_RATES reaches every clinician who never set that rate. One statement, so two
      // concurrent saves of different rates both land (jsonb `||` merges into the stored row).
      const payRates: Record<string, number> = {};
      for (const [k, v] of Object.entries(input.pay_rates ?? {})) if (v !== undefined) payRates[k] = v;
      const now = clock.now();
      await db
        .insert(clinicianSettings)
        .values({
          userId,
          payRates,
          updatedAt: now,
          ...(input.time_zone !== undefined ? { timeZone: input.time_zone } : {}),
          ...(input.mileage_rate !== undefined ? { mileageRate: input.mileage_rate } : {}),
        })
        .onConflictDoUpdate({
          target: clinicianSettings.userId,
          set: {
            payRates: sql`${clinicianSettings.payRates} || excluded.pay_rates`,
            updatedAt: now,
            ...(input.time_zone !== undefined ? { timeZone: input.time_zone } : {}),
            ...(input.mileage_rate !== undefined ? { mileageRate: input.mileage_rate } : {}),
          },
        });
      return this.get(userId);
    },
  };
}

export type ClinicianSettingsService = ReturnType<typeof createClinicianSettings>;
