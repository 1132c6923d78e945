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
