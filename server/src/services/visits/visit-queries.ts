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
import { runPrepared } from '../../db/one-statement.ts';
import type { AuditContext, AuditLog } from '../audit/audit-log.ts';
import { type ClinicianSettingsService } from '../clinician-settings.ts';
import { localDate } from '@fieldchart/schema/rules';
import { addDays } from '@fieldchart/schema/rules';

const minDate = (a: string, b: string) => (a < b ? a : b);
import { isUuid } from '../ids.ts';
import { visitJson, visitNotFound, type VisitJson, type VisitRecord, type VisitRecords } from './visit-records.ts';

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
    /**
     * One statement: both lists with everything their records need, and the audit row (a CTE),
     * so the read and its audit entry commit together in one round trip. `timeZone` is the
     * clinician's (the session check has it); without it the settings are read.
     */
    async upcoming(
      ctx: AuditContext,
      ownerId: string,
      q: UpcomingQuery,
      timeZone?: string,
    ): Promise<{ today: string; today_visit: VisitRecord[]; upcomming_visit: VisitRecord[] }> {
      const entry = { action: 'list', resourceType: 'visit', details: { route: 'upcoming', filter: q.filter } } as const;
      let today: string;
      let rows: Array<{ list: number; r: VisitJson }>;
      try {
        today = q.filter_date ?? localDate(clock.now(), timeZone ?? (await settings.get(ownerId)).time_zone);
        const days = FILTER_DAYS[q.filter];
        // Clamped to the last clinical date: no visit lies beyond it, and the window stays a date.
        const until = days === null ? null : minDate(addDays(today, days), CLINICAL_DATE_MAX);
        const mine = sql`v.owner_id = ${ownerId}::uuid and v.deleted_at is null`;
        rows = await runPrepared<{ list: number; r: VisitJson }>(
          deps.db,
          'visits_upcoming',
          sql`with today_rows as (
              select v.id, row_number() over (order by v.start_time, v.created_at) as ord from visits v
              where ${mine} and v.visit_date = ${today}::date and v.status <> 'cancelled'
              order by v.start_time, v.created_at limit ${q.per_page}::int),
            upcoming_rows as (
              select v.id, row_number() over (order by v.visit_date, v.start_time, v.created_at) as ord from visits v
              where ${days === 0 ? sql`false and ` : sql``}${mine} and v.visit_date > ${today}::date${until === null ? sql`` : sql` and v.visit_date <= ${until}::date`}
                and v.status in ('scheduled', 'in_progress')
              order by v.visit_date, v.start_time, v.created_at limit ${q.per_page}::int),
            picked as (select 0 as list, ord, id from today_rows union all select 1, ord, id from upcoming_rows),
            audit as (${audit.insertFor(ctx, entry, 'success', sql`jsonb_build_object('count', (select count(*) from picked))`)})
            select p.list, ${visitJson(ownerId, { soap: false })} as r from picked p join visits v on v.id = p.id order by p.list, p.ord`,
        );
      } catch (err) {
        await audit.failed(ctx, entry, err);
        throw err;
      }
      const all = records.fromJson(rows.map((x) => x.r), { soap: false });
      const todayCount = rows.filter((x) => Number(x.list) === 0).length;
      return { today, today_visit: all.slice(0, todayCount), upcomming_visit: all.slice(todayCount) };
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

    /** One statement: the visit with its children and note, and the audit row (not_found when there is no such visit of the caller's). */
    async details(ctx: AuditContext, ownerId: string, id: string): Promise<VisitRecord> {
      const entry = { action: 'read', resourceType: 'visit', resourceId: id } as const;
      let rows: Array<{ r: VisitJson }>;
      try {
        if (!isUuid(id)) throw visitNotFound();
        rows = await runPrepared<{ r: VisitJson }>(
          deps.db,
          'visit_details',
          sql`with found as (select v.id from visits v where v.id = ${id}::uuid and v.owner_id = ${ownerId}::uuid and v.deleted_at is null),
            audit as (${audit.insertFor(ctx, entry, sql`case when exists (select 1 from found) then 'success' else 'not_found' end`)})
            select ${visitJson(ownerId, { soap: true })} as r from visits v where v.id in (select id from found)`,
        );
      } catch (err) {
        await audit.failed(ctx, entry, err);
        throw err;
      }
      const [row] = rows;
      // The statement has already recorded the not_found outcome.
      if (!row) throw visitNotFound();
      const [record] = records.fromJson([row.r], { soap: true });
      return record as VisitRecord;
    },
  };
}
