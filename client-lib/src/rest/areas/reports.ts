/** Dashboards and reports. Dates are YYYY-MM-DD in the clinician's time zone (see `mySettings`). */
import type * as z from 'zod';
import type {
  dashboardActionList,
  problemNote,
  progressStats,
  reportRangeQuery,
  reportSummary,
  therapistEarning,
  timeSavedQuery,
  timeSavedReport,
} from '@fieldchart/schema/api';
import { ENDPOINTS as E } from '../endpoints.ts';
import type { Invoker } from '../invoke.ts';
import type { ReadOptions } from '../options.ts';

/** Today's, pending and this week's completed visits, and alert counts by type. */
export type DashboardActionList = z.output<typeof dashboardActionList>;
/** The last 8 weeks of completed visits, documentation time and on-time notes. */
export type ProgressStats = z.output<typeof progressStats>;
/** Visit pay and mileage reimbursement: this week, this month, year to date. */
export type TherapistEarning = z.output<typeof therapistEarning>;
/** A visit whose documentation needs attention, with the reasons. */
export type ProblemNote = z.output<typeof problemNote>;
/** Totals and one entry per visit in a date range. */
export type ReportSummary = z.output<typeof reportSummary>;
/** Documentation time of AI-assisted visits against manual ones. */
export type TimeSavedReport = z.output<typeof timeSavedReport>;
/** Query of `GET /reports/summary` (default: the current year). */
export type ReportRangeQuery = Partial<z.output<typeof reportRangeQuery>>;
/** Query of `GET /reports/time-saved` (default: the last 90 days, `scope` `me`). */
export type TimeSavedQuery = Partial<z.output<typeof timeSavedQuery>>;

/** `client.reports`. */
export interface ReportsApi {
  /** `GET /dashboard-action-list`. */
  actionList(options?: ReadOptions): Promise<DashboardActionList>;
  /** `GET /progress-stats`. */
  progressStats(options?: ReadOptions): Promise<ProgressStats>;
  /** `GET /therapist-earning`. */
  earnings(options?: ReadOptions): Promise<TherapistEarning>;
  /** `GET /problem-notes`: late, unsigned or flagged documentation. */
  problemNotes(options?: ReadOptions): Promise<ProblemNote[]>;
  /** `GET /reports/summary`. */
  summary(query?: ReportRangeQuery, options?: ReadOptions): Promise<ReportSummary>;
  /** `GET /reports/time-saved`: `scope: 'organization'` needs an admin seat (403 otherwise). */
  timeSaved(query?: TimeSavedQuery, options?: ReadOptions): Promise<TimeSavedReport>;
}

export function reportsApi(call: Invoker): ReportsApi {
  return {
    actionList: (o) => call.data(E['reports.actionList'], {}, o),
    progressStats: (o) => call.data(E['reports.progressStats'], {}, o),
    earnings: (o) => call.data(E['reports.earnings'], {}, o),
    problemNotes: (o) => call.data(E['reports.problemNotes'], {}, o),
    summary: (query, o) => call.data(E['reports.summary'], { query }, o),
    timeSaved: (query, o) => call.data(E['reports.timeSaved'], { query }, o),
  };
}
