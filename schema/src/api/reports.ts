import * as z from 'zod';
import { isoDate } from './common.ts';
import { visit } from './visits.ts';

/*
 * Dashboards and reports (README: "Dashboards and reports" holds every definition). Dates
 * are YYYY-MM-DD in the clinician's time zone (GET /my-settings), durations in minutes,
 * money in dollars rounded to cents, miles rounded to hundredths.
 */

export const reportRangeQuery = z.object({
  from: isoDate.optional().describe('First day, inclusive (default: January 1 of the current year)'),
  to: isoDate.optional().describe('Last day, inclusive (default: December 31 of the current year)'),
});

export const timeSavedQuery = z.object({
  from: isoDate.optional().describe('First day, inclusive (default: 90 days before today)'),
  to: isoDate.optional().describe('Last day, inclusive (default: today)'),
  scope: z.enum(['me', 'organization']).default('me').describe("'organization' needs an organization admin seat: the visits recorded under the organization, by current and former members"),
});

export const PROBLEM_KINDS = ['late_documentation', 'unsigned', 'review_flags'] as const;

export const dashboardActionList = z
  .object({
    today: z.string().describe("Today's date in the clinician's time zone"),
    stats: z.object({
      today: z.number().int().describe('Visits dated today, cancelled ones excluded'),
      pending: z.number().int().describe('Visits dated before today, not cancelled, that are not completed or have no SOAP note'),
      completed: z.number().int().describe('Completed visits dated this week (Monday to Sunday)'),
    }),
    alerts: z
      .object({
        late_documentation: z.number().int(),
        unsigned_notes: z.number().int(),
        review_flags: z.number().int(),
        missing_mileage: z.number().int(),
        abnormal_vitals: z.number().int(),
      })
      .describe('Counts by type; see the README for each definition'),
  })
  .meta({ id: 'DashboardActionList' });

const week = z.object({
  week_start: z.string(),
  week_end: z.string(),
  visits_completed: z.number().int(),
  documentation_minutes_avg: z.number().nullable().describe('From the visit timer; null without timed visits'),
  notes_submitted: z.number().int(),
  notes_on_time: z.number().int().describe('Submitted within 24 hours of arrival (or of the scheduled start)'),
  on_time_rate: z.number().nullable().describe('notes_on_time / notes_submitted, 0–1; null without notes'),
});

export const progressStats = z
  .object({
    weeks: z.array(week).describe('The last 8 weeks, oldest first; the last one is the current week'),
    totals: z.object({
      visits_completed: z.number().int(),
      documentation_minutes_avg: z.number().nullable(),
      notes_submitted: z.number().int(),
      notes_on_time: z.number().int(),
      on_time_rate: z.number().nullable(),
      ai_assisted_visits: z.number().int(),
    }),
  })
  .meta({ id: 'ProgressStats' });

const earningPeriod = z.object({
  from: z.string(),
  to: z.string(),
  completed_visits: z.number().int(),
  visit_pay: z.number(),
  reimbursable_miles: z.number(),
  mileage_reimbursement: z.number(),
  total: z.number(),
  by_visit_type: z.array(
    z.object({ visit_type: z.string(), visits: z.number().int(), rate: z.number(), amount: z.number() }),
  ),
});

export const therapistEarning = z
  .object({
    currency: z.literal('USD'),
    mileage_rate: z.number(),
    pay_rates: z.record(z.string(), z.number()),
    this_week: earningPeriod,
    this_month: earningPeriod,
    year_to_date: earningPeriod,
  })
  .meta({ id: 'TherapistEarning' });

const patientBrief = z.object({ uuid: z.string(), first_name: z.string(), last_name: z.string() }).nullable();

export const problemNote = visit
  .extend({
    documentation_due_at: z.string().meta({ format: 'date-time' }).describe('24 hours after arrival, or after the scheduled start without one'),
    problems: z.array(z.enum(PROBLEM_KINDS)).min(1),
  })
  .meta({ id: 'ProblemNote', description: 'A Visit whose documentation needs attention, with the reasons' });

const miles = z.number().nullable();

export const summaryVisit = z.object({
  schedule_uuid: z.string(),
  patient_uuid: z.string().nullable(),
  patient: patientBrief,
  visit_date: z.string(),
  start_time: z.string(),
  status: z.string(),
  visit_type: z.string(),
  ai_assisted: z.boolean(),
  has_note: z.boolean(),
  drive_minutes: z.number().nullable(),
  onsite_minutes: z.number().nullable(),
  documentation_minutes: z.number().nullable(),
  total_miles: miles,
  travel_miles: miles,
  onsite_miles: miles,
});

export const reportSummary = z
  .object({
    from: z.string(),
    to: z.string(),
    totals: z.object({
      visits: z.number().int().describe('Every visit dated in the range, whatever its status'),
      completed_visits: z.number().int(),
      cancelled_visits: z.number().int(),
      ai_assisted_visits: z.number().int(),
      notes_submitted: z.number().int(),
      visits_with_mileage: z.number().int(),
      visits_with_split: z.number().int(),
      total_miles: z.number(),
      travel_miles: z.number().describe('Only visits that recorded the travel/onsite split'),
      onsite_miles: z.number().describe('Only visits that recorded the travel/onsite split'),
      drive_minutes: z.number(),
      onsite_minutes: z.number(),
      documentation_minutes: z.number(),
    }),
    visits: z.array(summaryVisit).describe('One entry per visit in the range, by date and start time'),
  })
  .meta({ id: 'ReportSummary' });

const sample = z.object({
  visits: z.number().int(),
  documentation_minutes_avg: z.number().nullable(),
  documentation_minutes_median: z.number().nullable(),
});

export const timeSavedReport = z
  .object({
    scope: z.enum(['me', 'organization']),
    from: z.string(),
    to: z.string(),
    min_sample: z.number().int().describe('Visits each sample needs before a saving is claimed'),
    ai_assisted: sample,
    manual: sample,
    sufficient_data: z.boolean(),
    note: z.string().nullable().describe('Why the data does not support a claim; null when it does'),
    minutes_saved_per_visit: z.number().nullable().describe('Manual average minus AI-assisted average; null without sufficient data'),
    total_minutes_saved: z.number().nullable().describe('minutes_saved_per_visit × AI-assisted visits; null without sufficient data'),
  })
  .meta({ id: 'TimeSavedReport' });
