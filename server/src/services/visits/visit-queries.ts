/**
 * Reading visits: today's and upcoming ones in the clinician's time zone, the history, and
 * one visit's details. Lists carry full Visit records except the SOAP note (details only).
 */
import { and, asc, count, desc, eq, gt, inArray, isNull, lt, lte, ne, or, sql, type SQL } from 'drizzle-orm';
import type * as z from 'zod';
import { CLINICAL_DATE_MAX, type upcomingVisitsQuery, type visitHistoryQuery } from '@fieldchart/schema/api';
import { soapNotes, visits } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';
import type { AuditContext, AuditLog } from '../audit/audit-log.ts';
import { type ClinicianSettingsService } from '../clinician-settings.ts';
import { localDate } from '@fieldchart/schema/rules';
import { addDays } from '@fieldchart/schema/rules';

const minDate = (a: string, b: string) => (a < b ? a : b);
import { findOwnedVisit, type VisitRecord, type VisitRecords } from './visit-records.ts';

export type UpcomingQuery = z.infer<typeof upcomingVisitsQuery>;
export type HistoryQuery = z.infer<typeof visitHistoryQuery>;

/** Days after "today" that each `filter` lets into `upcomming_visit` (null: no bound). */
export const FILTER_DAYS: Readonly<Record<UpcomingQuery['filter'], number | null>> = { all: null, today: 0, week: 7, month: 30 };

const hasNote = sql`exists (select 1 from ${soapNotes} where ${soapNotes.visitId} = ${visits.id} and ${soapNotes.deletedAt} is null)`;

export function createVisitQueries(deps: { db: Db; clock: Clock; audit: AuditLog; records: VisitRecords; settings: ClinicianSettingsService }) {
  const { clock, audit, records, settings } = deps;

  async function todayOf(ownerId: string, tx: Db): Promise<string> {
    const { time_zone } = await settings.get(ownerId, tx);
    return localDate(clock.now(), time_zone);
  }

  return {
    async upcoming(ctx: AuditContext, ownerId: string, q: UpcomingQuery): Promise<{ today: string; today_visit: VisitRecord[]; upcomming_visit: VisitRecord[] }> {
      return audit.around(ctx, { action: 'list', resourceType: 'visit', details: { route: 'upcoming', filter: q.filter } }, async (tx, note) => {
        const today = q.filter_date ?? (await todayOf(ownerId, tx));
        const mine = and(eq(visits.ownerId, ownerId), isNull(visits.deletedAt));
        const todayRows = await tx
          .select()
          .from(visits)
          .where(and(mine, eq(visits.visitDate, today), ne(visits.status, 'cancelled')))
          .orderBy(asc(visits.startTime), asc(visits.createdAt))
          .limit(q.per_page);
        const days = FILTER_DAYS[q.filter];
        const upcomingRows =
          days === 0
            ? []
            : await tx
                .select()
                .from(visits)
                .where(
                  and(
                    mine,
                    gt(visits.visitDate, today),
                    // Clamped to the last clinical date: no visit lies beyond it, and the window stays a date.
                    days === null ? undefined : lte(visits.visitDate, minDate(addDays(today, days), CLINICAL_DATE_MAX)),
                    inArray(visits.status, ['scheduled', 'in_progress']),
                  ),
                )
                .orderBy(asc(visits.visitDate), asc(visits.startTime), asc(visits.createdAt))
                .limit(q.per_page);
        note({ details: { count: todayRows.length + upcomingRows.length } });
        // One toRecords for both lists: one query per related table instead of two.
        const all = await records.toRecords(tx, ownerId, [...todayRows, ...upcomingRows], { soap: false });
        const todayVisits = all.slice(0, todayRows.length);
        const upcomingVisits = all.slice(todayRows.length);
        return { today, today_visit: todayVisits, upcomming_visit: upcomingVisits };
      });
    },

    async history(ctx: AuditContext, ownerId: string, q: HistoryQuery) {
      return audit.around(ctx, { action: 'list', resourceType: 'visit', details: { route: 'history', record_type: q.record_type } }, async (tx, note) => {
        const today = await todayOf(ownerId, tx);
        const where: SQL | undefined = and(
          eq(visits.ownerId, ownerId),
          isNull(visits.deletedAt),
          or(lt(visits.visitDate, today), inArray(visits.status, ['completed', 'missed', 'cancelled'])),
          q.record_type === 'with_notes' ? hasNote : undefined,
        );
        const [{ total } = { total: 0 }] = await tx.select({ total: count() }).from(visits).where(where);
        const rows = await tx
          .select()
          .from(visits)
          .where(where)
          .orderBy(desc(visits.visitDate), desc(visits.startTime), desc(visits.createdAt))
          .limit(q.per_page)
          .offset((q.page - 1) * q.per_page);
        note({ details: { count: rows.length } });
        return {
          data: await records.toRecords(tx, ownerId, rows, { soap: false }),
          meta: { current_page: q.page, per_page: q.per_page, total, last_page: Math.max(1, Math.ceil(total / q.per_page)) },
        };
      });
    },

    async details(ctx: AuditContext, ownerId: string, id: string): Promise<VisitRecord> {
      return audit.around(ctx, { action: 'read', resourceType: 'visit', resourceId: id }, async (tx) => {
        const row = await findOwnedVisit(tx, ownerId, id);
        const [record] = await records.toRecords(tx, ownerId, [row], { soap: true });
        return record as VisitRecord;
      });
    },
  };
}
