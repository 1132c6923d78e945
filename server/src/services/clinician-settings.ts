import { eq } from 'drizzle-orm';
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

export function createClinicianSettings(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;
  return {
    async get(userId: string, tx: Db = db): Promise<ClinicianSettings> {
      const [row] = await tx.select().from(clinicianSettings).where(eq(clinicianSettings.userId, userId));
      return {
        time_zone: row?.timeZone ?? DEFAULT_TIME_ZONE,
        pay_rates: { ...DEFAULT_PAY_RATES, ...(row?.payRates ?? {}) },
        mileage_rate: row?.mileageRate ?? DEFAULT_MILEAGE_RATE,
      };
    },

    async update(
      userId: string,
      input: { time_zone?: string | undefined; pay_rates?: Partial<Record<string, number>> | undefined; mileage_rate?: number | undefined },
    ): Promise<ClinicianSettings> {
      const current = await this.get(userId);
      const payRates: Record<string, number> = { ...current.pay_rates };
      for (const [k, v] of Object.entries(input.pay_rates ?? {})) if (v !== undefined) payRates[k] = v;
      const values = {
        userId,
        timeZone: input.time_zone ?? current.time_zone,
        payRates,
        mileageRate: input.mileage_rate ?? current.mileage_rate,
        updatedAt: clock.now(),
      };
      await db
        .insert(clinicianSettings)
        .values(values)
        .onConflictDoUpdate({ target: clinicianSettings.userId, set: values });
      return this.get(userId);
    },
  };
}

export type ClinicianSettingsService = ReturnType<typeof createClinicianSettings>;
