import type { z } from 'zod';
import type { reportSummary, timeSavedReport } from '@fieldchart/schema/api';
import type { Db } from '../../db/database.ts';
import type { Clock } from '../../clock.ts';
import { Invalid } from '../../errors.ts';
import type { ClinicianContext } from '../../http/audit-context.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import type { Principal } from '../auth/sessions.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import { type ClinicianSettingsService } from '../clinician-settings.ts';
import { localDate } from '@fieldchart/schema/rules';
import { requireAdmin } from '../organizations/seats.ts';
import { average, loadVisitFacts, median, patientBriefs, type VisitFact } from './visit-facts.ts';
import { addDays, minutesOf as minutes, round } from '@fieldchart/schema/rules';

/** Each sample (AI-assisted, manual) needs this many timed visits before a saving is claimed. */
export const TIME_SAVED_MIN_SAMPLE = 10;
export const TIME_SAVED_DEFAULT_DAYS = 90;
/** The longest range a report answers (it lists every visit). */
export const MAX_REPORT_DAYS = 366 * 3;

function checkRange(from: string, to: string): void {
  if (from > to) throw Invalid.field('from', 'must not be after to', 'invalid_date_range');
  const days = (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000;
  if (days > MAX_REPORT_DAYS) throw Invalid.field('to', `the range must not exceed ${MAX_REPORT_DAYS} days`, 'invalid_date_range');
}

const sumOf = (values: ReadonlyArray<number | null>) => values.reduce<number>((s, v) => s + (v ?? 0), 0);

/** Totals of a summary: travel and onsite miles only from visits that recorded the split. */
export function summaryTotals(facts: readonly VisitFact[]): z.infer<typeof reportSummary>['totals'] {
  const withMileage = facts.filter((v) => v.totalMiles !== null);
  const split = withMileage.filter((v) => v.travelMiles !== null && v.onsiteMiles !== null);
  return {
    visits: facts.length,
    completed_visits: facts.filter((v) => v.status === 'completed').length,
    cancelled_visits: facts.filter((v) => v.status === 'cancelled').length,
    ai_assisted_visits: facts.filter((v) => v.aiAssisted).length,
    notes_submitted: facts.filter((v) => v.noteId !== null).length,
    visits_with_mileage: withMileage.length,
    visits_with_split: split.length,
    total_miles: round(sumOf(withMileage.map((v) => v.totalMiles))),
    travel_miles: round(sumOf(split.map((v) => v.travelMiles))),
    onsite_miles: round(sumOf(split.map((v) => v.onsiteMiles))),
    drive_minutes: round(sumOf(facts.map((v) => v.driveSeconds)) / 60, 1),
    onsite_minutes: round(sumOf(facts.map((v) => v.onsiteSeconds)) / 60, 1),
    documentation_minutes: round(sumOf(facts.map((v) => v.documentationSeconds)) / 60, 1),
  };
}

/** Documentation time of completed, timed visits. */
function sampleOf(facts: readonly VisitFact[]) {
  const secs = facts.map((v) => v.documentationSeconds as number);
  const avg = average(secs);
  const med = median(secs);
  return {
    visits: secs.length,
    documentation_minutes_avg: avg === null ? null : minutes(avg),
    documentation_minutes_median: med === null ? null : minutes(med),
  };
}

export function timeSavedFrom(
  facts: readonly VisitFact[],
  meta: { scope: 'me' | 'organization'; from: string; to: string },
): z.infer<typeof timeSavedReport> {
  const timed = facts.filter((v) => v.status === 'completed' && v.documentationSeconds !== null && v.documentationSeconds > 0);
  const ai = sampleOf(timed.filter((v) => v.aiAssisted));
  const manual = sampleOf(timed.filter((v) => !v.aiAssisted));
  const short = [
    ai.visits < TIME_SAVED_MIN_SAMPLE ? `${ai.visits} AI-assisted` : null,
    manual.visits < TIME_SAVED_MIN_SAMPLE ? `${manual.visits} manual` : null,
  ].filter((s) => s !== null);
  const sufficient = short.length === 0;
  const perVisit =
    sufficient && ai.documentation_minutes_avg !== null && manual.documentation_minutes_avg !== null
      ? round(manual.documentation_minutes_avg - ai.documentation_minutes_avg, 1)
      : null;
  return {
    ...meta,
    min_sample: TIME_SAVED_MIN_SAMPLE,
    ai_assisted: ai,
    manual,
    sufficient_data: sufficient,
    note: sufficient
      ? null
      : `Not enough timed visits to compare: ${short.join(' and ')} in this range; each needs at least ${TIME_SAVED_MIN_SAMPLE} completed visits with documentation time.`,
    minutes_saved_per_visit: perVisit,
    total_minutes_saved: perVisit === null ? null : round(perVisit * ai.visits, 1),
  };
}

export function createSummaryReports(deps: { db: Db; clock: Clock; phi: PhiCrypto; audit: AuditLog; settings: ClinicianSettingsService }) {
  const { db, clock, phi, audit, settings } = deps;
  return {
    async summary(ctx: ClinicianContext, query: { from?: string | undefined; to?: string | undefined }): Promise<z.infer<typeof reportSummary>> {
      const { time_zone: tz } = await settings.get(ctx.actorUserId);
      const year = localDate(clock.now(), tz).slice(0, 4);
      const from = query.from ?? `${year}-01-01`;
      const to = query.to ?? `${year}-12-31`;
      checkRange(from, to);
      return audit.around(ctx, { action: 'list', resourceType: 'visit', details: { route: '/reports/summary', from, to } }, async (tx, note) => {
        const facts = await loadVisitFacts(tx, { owner: { userId: ctx.actorUserId }, from, to });
        const names = await patientBriefs(tx, phi, ctx.actorUserId, facts.map((v) => v.patientId));
        note({ details: { count: facts.length } });
        return {
          from,
          to,
          totals: summaryTotals(facts),
          visits: facts.map((v) => ({
            schedule_uuid: v.id,
            patient_uuid: v.patientId,
            patient: v.patientId ? (names.get(v.patientId) ?? null) : null,
            visit_date: v.visitDate,
            start_time: v.startTime,
            status: v.status,
            visit_type: v.visitType,
            ai_assisted: v.aiAssisted,
            has_note: v.noteId !== null,
            drive_minutes: minutes(v.driveSeconds),
            onsite_minutes: minutes(v.onsiteSeconds),
            documentation_minutes: minutes(v.documentationSeconds),
            total_miles: v.totalMiles,
            travel_miles: v.travelMiles,
            onsite_miles: v.onsiteMiles,
          })),
        };
      });
    },

    async timeSaved(
      principal: Principal,
      query: { from?: string | undefined; to?: string | undefined; scope: 'me' | 'organization' },
    ): Promise<z.infer<typeof timeSavedReport>> {
      const { time_zone: tz } = await settings.get(principal.userId);
      const today = localDate(clock.now(), tz);
      const to = query.to ?? today;
      const from = query.from ?? addDays(to, -TIME_SAVED_DEFAULT_DAYS);
      checkRange(from, to);
      const owner =
        query.scope === 'organization'
          ? { organizationId: (await requireAdmin(db, principal)).organizationId }
          : { userId: principal.userId };
      const facts = await loadVisitFacts(db, { owner, from, to });
      return timeSavedFrom(facts, { scope: query.scope, from, to });
    },
  };
}
