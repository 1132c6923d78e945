import { inArray } from 'drizzle-orm';
import type { z } from 'zod';
import type { dashboardActionList, problemNote, progressStats } from '@fieldchart/schema/api';
import { visits } from '@fieldchart/schema/db';
import type { Db } from '../../db/database.ts';
import type { Clock } from '../../clock.ts';
import type { ClinicianContext } from '../../http/audit-context.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import { type ClinicianSettingsService } from '../clinician-settings.ts';
import { localDate } from '@fieldchart/schema/rules';
import { createVisitRecords } from '../visits/visit-records.ts';
import { average, documentationDueAt, loadVisitFacts, problemCandidate, type VisitFact } from './visit-facts.ts';
import { addDays, minutesOf as minutes, round, weekStart } from '@fieldchart/schema/rules';

type ProblemKind = z.infer<typeof problemNote>['problems'][number];

/** Days back that missing_mileage and abnormal_vitals alerts look (older ones are history, not actions). */
export const ALERT_WINDOW_DAYS = 30;
export const PROGRESS_WEEKS = 8;

/** Why a visit is a problem note at `now`; empty when it is not one. */
export function problemsOf(v: VisitFact, now: Date, timeZone: string): ProblemKind[] {
  if (v.status === 'cancelled') return [];
  const out: ProblemKind[] = [];
  const attended = v.arrivedAt !== null || v.status === 'completed';
  if (v.noteId === null && attended && documentationDueAt(v, timeZone) <= now) out.push('late_documentation');
  if (v.noteId !== null && v.noteSignedAt === null) out.push('unsigned');
  if (v.noteId !== null && (v.reviewFlags?.length ?? 0) > 0) out.push('review_flags');
  return out;
}

/** A note is on time when submitted by its due time. */
const onTime = (v: VisitFact, timeZone: string) =>
  v.noteSubmittedAt !== null && v.noteSubmittedAt <= documentationDueAt(v, timeZone);

export function createDashboard(deps: { db: Db; clock: Clock; phi: PhiCrypto; audit: AuditLog; settings: ClinicianSettingsService }) {
  const { db, clock, phi, audit, settings } = deps;
  // The visits area's mapper: problem notes are Visit records (spec: data (Visit[])).
  const visitRecords = createVisitRecords({ phi });

  async function problemFacts(userId: string, tx: Db, timeZone: string) {
    const now = clock.now();
    const facts = await loadVisitFacts(tx, { owner: { userId }, to: localDate(now, timeZone), where: problemCandidate });
    return facts.map((v) => ({ v, problems: problemsOf(v, now, timeZone) })).filter((p) => p.problems.length > 0);
  }

  return {
    async actionList(userId: string): Promise<z.infer<typeof dashboardActionList>> {
      const { time_zone: tz } = await settings.get(userId);
      const now = clock.now();
      const today = localDate(now, tz);
      const monday = weekStart(today);
      const everything = await loadVisitFacts(db, { owner: { userId }, to: addDays(monday, 6) });
      const live = everything.filter((v) => v.status !== 'cancelled');
      const recent = live.filter((v) => v.visitDate >= addDays(today, -ALERT_WINDOW_DAYS) && v.visitDate <= today);
      // The same rule as /problem-notes, over the visits already loaded.
      const problems = live.filter((v) => v.visitDate <= today).map((v) => problemsOf(v, now, tz));
      const count = (kind: ProblemKind) => problems.filter((p) => p.includes(kind)).length;
      return {
        today,
        stats: {
          today: live.filter((v) => v.visitDate === today).length,
          pending: live.filter((v) => v.visitDate < today && (v.status !== 'completed' || v.noteId === null)).length,
          completed: live.filter((v) => v.status === 'completed' && v.visitDate >= monday && v.visitDate <= addDays(monday, 6)).length,
        },
        alerts: {
          late_documentation: count('late_documentation'),
          unsigned_notes: count('unsigned'),
          review_flags: count('review_flags'),
          missing_mileage: recent.filter((v) => v.status === 'completed' && v.totalMiles === null).length,
          abnormal_vitals: recent.filter((v) => (v.vitalFlags?.length ?? 0) > 0).length,
        },
      };
    },

    async problemNotes(ctx: ClinicianContext): Promise<Array<z.infer<typeof problemNote>>> {
      const { time_zone: tz } = await settings.get(ctx.actorUserId);
      return audit.around(ctx, { action: 'list', resourceType: 'visit', details: { route: '/problem-notes' } }, async (tx, note) => {
        // Most urgent first: the oldest due date leads.
        const problems = (await problemFacts(ctx.actorUserId, tx, tz))
          .map((p) => ({ ...p, due: documentationDueAt(p.v, tz) }))
          .sort((a, b) => a.due.getTime() - b.due.getTime() || a.v.id.localeCompare(b.v.id));
        note({ details: { count: problems.length } });
        if (problems.length === 0) return [];
        const rows = await tx.select().from(visits).where(inArray(visits.id, problems.map((p) => p.v.id)));
        const byId = new Map(rows.map((r) => [r.id, r]));
        const ordered = problems.flatMap((p) => {
          const row = byId.get(p.v.id);
          return row ? [{ row, ...p }] : [];
        });
        const records = await visitRecords.toRecords(tx, ctx.actorUserId, ordered.map((p) => p.row), { soap: true });
        return records.map((r, i) => {
          const p = ordered[i] as (typeof ordered)[number];
          return { ...r, documentation_due_at: p.due.toISOString(), problems: p.problems };
        });
      });
    },

    async progressStats(userId: string): Promise<z.infer<typeof progressStats>> {
      const { time_zone: tz } = await settings.get(userId);
      const thisMonday = weekStart(localDate(clock.now(), tz));
      const first = addDays(thisMonday, -7 * (PROGRESS_WEEKS - 1));
      const facts = (await loadVisitFacts(db, { owner: { userId }, from: first, to: addDays(thisMonday, 6) })).filter(
        (v) => v.status !== 'cancelled',
      );
      const summarize = (vs: VisitFact[]) => {
        const completed = vs.filter((v) => v.status === 'completed');
        const docSeconds = completed.map((v) => v.documentationSeconds).filter((s): s is number => s !== null && s > 0);
        const noted = vs.filter((v) => v.noteSubmittedAt !== null);
        const inTime = noted.filter((v) => onTime(v, tz)).length;
        const avg = average(docSeconds);
        return {
          visits_completed: completed.length,
          documentation_minutes_avg: avg === null ? null : minutes(avg),
          notes_submitted: noted.length,
          notes_on_time: inTime,
          on_time_rate: noted.length === 0 ? null : round(inTime / noted.length, 3),
        };
      };
      const weeks = Array.from({ length: PROGRESS_WEEKS }, (_, i) => {
        const start = addDays(first, 7 * i);
        const end = addDays(start, 6);
        return { week_start: start, week_end: end, ...summarize(facts.filter((v) => v.visitDate >= start && v.visitDate <= end)) };
      });
      return {
        weeks,
        totals: { ...summarize(facts), ai_assisted_visits: facts.filter((v) => v.status === 'completed' && v.aiAssisted).length },
      };
    },
  };
}
