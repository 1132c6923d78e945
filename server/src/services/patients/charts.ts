import { and, asc, desc, eq, gte, inArray, isNotNull, isNull, lte, or, sql } from 'drizzle-orm';
import type { z } from 'zod';
import { vitalSigns, type DATE_RANGES, type scheduledVisitsBody } from '@fieldchart/schema/api';
import { soapNotes, visits } from '@fieldchart/schema/db';
import type { Db } from '../../db/database.ts';
import type { Clock } from '../../clock.ts';
import { NotFound } from '../../errors.ts';
import type { ClinicianContext } from '../../http/audit-context.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import type { AuditLog } from '../audit/audit-log.ts';
import { localDate } from '@fieldchart/schema/rules';
import { isUuid } from '../ids.ts';
import { addDays } from '@fieldchart/schema/rules';
import { referralRecord, type ReferralRow } from './patient-codec.ts';
import { countInt, ownedPatient, ownedReferral, timeZoneOf, visitBriefOf, type VisitRow } from './patient-queries.ts';
import { patientRecords } from './patients.ts';

export const referralNotFound = () => new NotFound('Referral not found', 'referral_not_found');

type NoteRow = typeof soapNotes.$inferSelect;

/**
 * The visits of a referral: those booked on it, and those booked for its patient without a
 * referral (a visit scheduled with only `patient_uuid` belongs to the patient's episode).
 */
const visitsOfReferral = (ref: ReferralRow) =>
  and(
    eq(visits.ownerId, ref.ownerId),
    isNull(visits.deletedAt),
    or(eq(visits.referralId, ref.id), and(eq(visits.patientId, ref.patientId), isNull(visits.referralId))),
  );

export function documentRecord(note: NoteRow, visit: VisitRow) {
  return {
    uuid: note.id,
    kind: 'visit_note' as const,
    title: `${visit.visitType.charAt(0).toUpperCase()}${visit.visitType.slice(1)} visit note, ${visit.visitDate}`,
    schedule_uuid: visit.id,
    patient_uuid: visit.patientId,
    referral_uuid: visit.referralId,
    visit_date: visit.visitDate,
    signed: note.signedAt !== null,
    signed_at: note.signedAt?.toISOString() ?? null,
    created_at: note.createdAt.toISOString(),
  };
}

function parseVitals(phi: PhiCrypto, note: NoteRow): z.infer<typeof vitalSigns> | null {
  const json = phi.open(note.vitalSignsEnc, 'soap_notes', 'vital_signs_enc', note.id);
  if (!json) return null;
  try {
    const parsed = vitalSigns.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** `first`…`last` (inclusive) of a dateRange value, in the clinician's calendar. */
export function rangeOf(dateRange: string, today: string): { from: string; to: string } {
  const weekday = (new Date(`${today}T00:00:00Z`).getUTCDay() + 6) % 7; // Monday = 0
  switch (dateRange) {
    case 'today':
      return { from: today, to: today };
    case 'this_week':
      return { from: addDays(today, -weekday), to: addDays(today, 6 - weekday) };
    case 'last_7_days':
      return { from: addDays(today, -6), to: today };
    case 'this_month': {
      const from = `${today.slice(0, 7)}-01`;
      const next = new Date(`${from}T00:00:00Z`);
      next.setUTCMonth(next.getUTCMonth() + 1);
      return { from, to: addDays(next.toISOString().slice(0, 10), -1) };
    }
    case 'last_90_days':
      return { from: addDays(today, -89), to: today };
    case 'this_year':
      return { from: `${today.slice(0, 4)}-01-01`, to: `${today.slice(0, 4)}-12-31` };
    default:
      return { from: addDays(today, -29), to: today };
  }
}

type ScheduledBody = z.output<typeof scheduledVisitsBody>;

/** Charts, scheduled visits by referral, the general summary and the document list. */
export function createPatientCharts(deps: { db: Db; clock: Clock; phi: PhiCrypto; audit: AuditLog }) {
  const { clock, phi, audit } = deps;

  async function referralFor(tx: Db, ctx: ClinicianContext, referralUuid: string): Promise<ReferralRow> {
    const ref = isUuid(referralUuid) ? await ownedReferral(tx, ctx.actorUserId, referralUuid) : null;
    if (!ref) throw referralNotFound();
    return ref;
  }

  return {
    /** GET /patient/chart-details/{referralUuid}: the patient, the referral, visits, last note, vitals and documents. */
    async chartDetails(ctx: ClinicianContext, referralUuid: string) {
      return audit.around(ctx, { action: 'read', resourceType: 'referral', resourceId: referralUuid }, async (tx, note) => {
        const ref = await referralFor(tx, ctx, referralUuid);
        const patientRow = await ownedPatient(tx, ctx.actorUserId, ref.patientId);
        if (!patientRow) throw referralNotFound();
        note({ details: { patient_uuid: patientRow.id } });
        const today = localDate(clock.now(), await timeZoneOf(tx, ctx.actorUserId));
        const all = await tx.select().from(visits).where(visitsOfReferral(ref)).orderBy(asc(visits.visitDate), asc(visits.startTime));
        const open = (v: VisitRow) => v.status === 'scheduled' || v.status === 'in_progress';
        const upcoming = all.filter((v) => open(v) && v.visitDate >= today).slice(0, 20);
        const recent = all.filter((v) => !(open(v) && v.visitDate >= today)).reverse().slice(0, 20);
        const byId = new Map(all.map((v) => [v.id, v]));
        const notes = all.length
          ? await tx
              .select()
              .from(soapNotes)
              .where(and(inArray(soapNotes.visitId, [...byId.keys()]), isNull(soapNotes.deletedAt)))
              .orderBy(desc(soapNotes.submittedAt))
          : [];
        const newestVisitFirst = [...notes].sort((a, b) => {
          const va = byId.get(a.visitId)!;
          const vb = byId.get(b.visitId)!;
          return `${vb.visitDate} ${vb.startTime}`.localeCompare(`${va.visitDate} ${va.startTime}`);
        });
        const last = newestVisitFirst[0];
        const withVitals = newestVisitFirst.find((n) => n.vitalSignsEnc);
        const [patient] = await patientRecords(tx, phi, ctx.actorUserId, [patientRow], clock.now());
        return {
          patient: patient!,
          referral: referralRecord(ref, {
            completed: all.filter((v) => v.status === 'completed').length,
            scheduled: all.filter(open).length,
          }),
          upcoming_visits: upcoming.map(visitBriefOf),
          recent_visits: recent.map(visitBriefOf),
          last_note: last
            ? {
                schedule_uuid: last.visitId,
                visit_date: byId.get(last.visitId)!.visitDate,
                assessment: phi.open(last.assessmentEnc, 'soap_notes', 'assessment_enc', last.id) ?? '',
                plan: phi.open(last.planEnc, 'soap_notes', 'plan_enc', last.id) ?? '',
              }
            : null,
          latest_vital_signs: withVitals ? parseVitals(phi, withVitals) : null,
          documents: newestVisitFirst.filter((n) => n.signedAt).map((n) => documentRecord(n, byId.get(n.visitId)!)),
        };
      });
    },

    /**
     * POST /patient/get-scheduled-visits/{referralUuid}: the referral's visits of every status,
     * by date and time. filter_month and filter_year narrow to that month (a month alone means
     * this year's; a year alone the whole year).
     */
    async scheduledVisits(ctx: ClinicianContext, referralUuid: string, body: ScheduledBody) {
      return audit.around(ctx, { action: 'list', resourceType: 'visit', resourceId: referralUuid, details: { by: 'referral' } }, async (tx, note) => {
        const ref = await referralFor(tx, ctx, referralUuid);
        let window: { from: string; to: string } | null = null;
        if (body.filter_month || body.filter_year) {
          const year = body.filter_year ?? localDate(clock.now(), await timeZoneOf(tx, ctx.actorUserId)).slice(0, 4);
          window = body.filter_month
            ? rangeOf('this_month', `${year}-${body.filter_month}-01`)
            : { from: `${year}-01-01`, to: `${year}-12-31` };
        }
        const rows = await tx
          .select()
          .from(visits)
          .where(and(visitsOfReferral(ref), window ? and(gte(visits.visitDate, window.from), lte(visits.visitDate, window.to)) : undefined))
          .orderBy(asc(visits.visitDate), asc(visits.startTime));
        const withNotes = new Set(
          rows.length
            ? (
                await tx
                  .select({ visitId: soapNotes.visitId })
                  .from(soapNotes)
                  .where(and(inArray(soapNotes.visitId, rows.map((v) => v.id)), isNull(soapNotes.deletedAt)))
              ).map((n) => n.visitId)
            : [],
        );
        note({ details: { count: rows.length } });
        return rows.map((v) => ({
          ...visitBriefOf(v),
          duration_minutes: v.durationMinutes,
          address: phi.open(v.addressEnc, 'visits', 'address_enc', v.id),
          has_note: withNotes.has(v.id),
        }));
      });
    },

    /** GET /patient/general-summary: counts only (no PHI) over the range, in the clinician's time zone. */
    async generalSummary(ctx: ClinicianContext, dateRange: (typeof DATE_RANGES)[number]) {
      return audit.around(ctx, { action: 'read', resourceType: 'patient_summary', details: { date_range: dateRange } }, async (tx) => {
        const timeZone = await timeZoneOf(tx, ctx.actorUserId);
        const { from, to } = rangeOf(dateRange, localDate(clock.now(), timeZone));
        const owner = ctx.actorUserId;
        const [p] = await tx.execute<{ total: number; new: number; open_referrals: number; seen: number }>(sql`
          select
            (select cast(count(*) as int) from patients where owner_id = ${owner} and deleted_at is null) as total,
            (select cast(count(*) as int) from patients where owner_id = ${owner} and deleted_at is null
               and (created_at at time zone ${timeZone})::date between ${from}::date and ${to}::date) as new,
            (select cast(count(*) as int) from patient_referrals where owner_id = ${owner} and deleted_at is null and status = 'open') as open_referrals,
            (select cast(count(distinct patient_id) as int) from visits where owner_id = ${owner} and deleted_at is null
               and status = 'completed' and visit_date between ${from}::date and ${to}::date) as seen
        `).then((r) => (Array.isArray(r) ? r : (r as { rows: never[] }).rows));
        const byStatus = await tx
          .select({ status: visits.status, n: countInt })
          .from(visits)
          .where(and(eq(visits.ownerId, owner), isNull(visits.deletedAt), gte(visits.visitDate, from), lte(visits.visitDate, to)))
          .groupBy(visits.status);
        const count = (s: string) => byStatus.find((r) => r.status === s)?.n ?? 0;
        const [notes] = await tx.execute<{ submitted: number; signed: number }>(sql`
          select cast(count(*) as int) as submitted, cast(count(signed_at) as int) as signed
          from soap_notes where owner_id = ${owner} and deleted_at is null
            and (submitted_at at time zone ${timeZone})::date between ${from}::date and ${to}::date
        `).then((r) => (Array.isArray(r) ? r : (r as { rows: never[] }).rows));
        return {
          date_range: dateRange,
          from,
          to,
          time_zone: timeZone,
          patients: { total: p?.total ?? 0, new: p?.new ?? 0, seen: p?.seen ?? 0, open_referrals: p?.open_referrals ?? 0 },
          visits: {
            total: byStatus.reduce((s, r) => s + r.n, 0),
            scheduled: count('scheduled'),
            in_progress: count('in_progress'),
            completed: count('completed'),
            cancelled: count('cancelled'),
            missed: count('missed'),
          },
          notes: { submitted: notes?.submitted ?? 0, signed: notes?.signed ?? 0, unsigned: (notes?.submitted ?? 0) - (notes?.signed ?? 0) },
        };
      });
    },

    /** GET /document/list: the caller's signed visit notes, newest visit first. */
    async documents(ctx: ClinicianContext) {
      return audit.around(ctx, { action: 'list', resourceType: 'document' }, async (tx, note) => {
        const rows = await tx
          .select({ note: soapNotes, visit: visits })
          .from(soapNotes)
          .innerJoin(visits, eq(visits.id, soapNotes.visitId))
          .where(
            and(
              eq(soapNotes.ownerId, ctx.actorUserId),
              eq(visits.ownerId, ctx.actorUserId),
              isNull(soapNotes.deletedAt),
              isNull(visits.deletedAt),
              isNotNull(soapNotes.signedAt),
            ),
          )
          .orderBy(desc(visits.visitDate), desc(visits.startTime), desc(soapNotes.id));
        note({ details: { count: rows.length } });
        return rows.map((r) => documentRecord(r.note, r.visit));
      });
    },
  };
}
