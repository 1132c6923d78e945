import * as z from 'zod';
import { VISIT_TYPES } from './visits.ts';

const isTimeZone = (tz: string) => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
};

export const timeZone = z.string().min(1).max(64).refine(isTimeZone, 'must be an IANA time zone such as America/Chicago');

export const clinicianSettings = z
  .object({
    time_zone: z.string().describe('IANA time zone: decides what "today" is for visits and reports'),
    pay_rates: z.record(z.string(), z.number()).describe('Pay per visit in dollars, by visit type'),
    mileage_rate: z.number().describe('Reimbursement in dollars per business (travel) mile'),
  })
  .meta({ id: 'ClinicianSettings' });

export const clinicianSettingsBody = z
  .object({
    time_zone: timeZone.optional(),
    pay_rates: z.partialRecord(z.enum(VISIT_TYPES), z.number().min(0).max(10_000)).optional(),
    mileage_rate: z.number().min(0).max(10).optional(),
  })
  .strict();
