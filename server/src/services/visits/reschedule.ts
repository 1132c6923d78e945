/**
 * Rescheduling a day at once (POST /scheduling/apply): every visit named must be the caller's
 * and every time valid, or nothing changes. Each changed row's update bumps its row_version
 * (the sync trigger), so devices pull the new times.
 */
import { and, eq, inArray, isNull } from 'drizzle-orm';
import { visits } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import { Invalid } from '../../errors.ts';
import type { AuditContext, AuditLog } from '../audit/audit-log.ts';
import { type ClinicianSettingsService } from '../clinician-settings.ts';
import { wallTimeExists } from '@fieldchart/schema/rules';
import { visitNotFound } from './visit-records.ts';
import { isUuid } from '../ids.ts';

const HHMM = /^([01]\d|2[0-3]):[0-5]\d$/;

export interface RescheduleInput {
  readonly date: string;
  readonly visits: ReadonlyArray<{ readonly schedule_uuid: string; readonly start_time: string }>;
}

export function createReschedule(deps: { clock: Clock; audit: AuditLog; settings: ClinicianSettingsService }) {
  const { clock, audit, settings } = deps;

  return {
    async rescheduleDay(ctx: AuditContext, ownerId: string, input: RescheduleInput): Promise<{ changed: number }> {
      return audit.around(ctx, { action: 'update', resourceType: 'visit', details: { route: 'scheduling_apply', date: input.date, count: input.visits.length } }, async (tx, note) => {
        const ids = input.visits.map((v) => v.schedule_uuid);
        // The same 404 body as every visit lookup (visitNotFound): naming the id would make a
        // foreign visit's answer differ from a random id's (test/server/tenant-isolation.test.ts).
        if (ids.some((id) => !isUuid(id))) throw visitNotFound();
        // Row locks: a concurrent timer event or reschedule of the same visits waits for this one.
        const rows = await tx
          .select({ id: visits.id, visitDate: visits.visitDate, startTime: visits.startTime, status: visits.status })
          .from(visits)
          .where(and(inArray(visits.id, ids), eq(visits.ownerId, ownerId), isNull(visits.deletedAt)))
          .for('update');
        const byId = new Map(rows.map((r) => [r.id, r]));
        // Foreign and missing read the same: nothing tells the caller another clinician's id exists.
        if (ids.some((id) => !byId.has(id))) throw visitNotFound();
        const { time_zone: timeZone } = await settings.get(ownerId, tx);
        const seen = new Set<string>();
        const changes: Array<{ id: string; startTime: string }> = [];
        for (const [i, v] of input.visits.entries()) {
          const row = byId.get(v.schedule_uuid)!;
          const bad = (why: string) => new Invalid(`Visit ${v.schedule_uuid}: start_time ${why}`, { [`visits.${i}.start_time`]: [why] }, 'invalid_reschedule');
          if (seen.has(row.id)) throw new Invalid(`Visit ${row.id} is named twice`, { [`visits.${i}.schedule_uuid`]: ['is named twice'] }, 'invalid_reschedule');
          seen.add(row.id);
          if (row.visitDate !== input.date) throw new Invalid(`Visit ${row.id} is not on ${input.date}`, { [`visits.${i}.schedule_uuid`]: [`is not on ${input.date}`] }, 'invalid_reschedule');
          if (!HHMM.test(v.start_time)) throw bad('must be a time (HH:MM, 00:00–23:59)');
          if (!wallTimeExists(input.date, v.start_time, timeZone)) throw bad(`does not exist in ${timeZone} on that date (daylight-saving change)`);
          if (v.start_time === row.startTime) continue;
          // Only a visit still to come moves; one under way or done keeps the time it happened at.
          if (row.status !== 'scheduled') throw bad(`cannot change: the visit is ${row.status}`);
          changes.push({ id: row.id, startTime: v.start_time });
        }
        const now = clock.now();
        for (const c of changes) await tx.update(visits).set({ startTime: c.startTime, updatedAt: now }).where(eq(visits.id, c.id));
        note({ details: { changed: changes.length } });
        return { changed: changes.length };
      });
    },
  };
}
