import { and, asc, desc, eq, gte, inArray, isNull, max, sql } from 'drizzle-orm';
import { patientReferrals, patients, visits } from '@fieldchart/schema/db';
import type { Db } from '../../db/database.ts';
import { readClinicianSettings } from '../clinician-settings.ts';
import type { PatientRow, ReferralRow } from './patient-codec.ts';

/*
 * Data access for the patients area. Every lookup by id takes the owner: a record of another
 * clinician is simply not found, exactly like a random id (spec: Authentication rule 12).
 */

export async function ownedPatient(tx: Db, ownerId: string, id: string, lock = false): Promise<PatientRow | null> {
  const q = tx
    .select()
    .from(patients)
    .where(and(eq(patients.id, id), eq(patients.ownerId, ownerId), isNull(patients.deletedAt)));
  const [row] = lock ? await q.for('update') : await q;
  return row ?? null;
}

export async function ownedReferral(tx: Db, ownerId: string, id: string): Promise<ReferralRow | null> {
  const [row] = await tx
    .select()
    .from(patientReferrals)
    .where(and(eq(patientReferrals.id, id), eq(patientReferrals.ownerId, ownerId), isNull(patientReferrals.deletedAt)));
  return row ?? null;
}

/** The newest open referral of each patient. */
export async function openReferralsOf(tx: Db, patientIds: string[]): Promise<Map<string, ReferralRow>> {
  if (patientIds.length === 0) return new Map();
  const rows = await tx
    .select()
    .from(patientReferrals)
    .where(and(inArray(patientReferrals.patientId, patientIds), eq(patientReferrals.status, 'open'), isNull(patientReferrals.deletedAt)))
    .orderBy(desc(patientReferrals.createdAt), desc(patientReferrals.id));
  const out = new Map<string, ReferralRow>();
  for (const r of rows) if (!out.has(r.patientId)) out.set(r.patientId, r);
  return out;
}

export type VisitRow = typeof visits.$inferSelect;

export const visitBriefOf = (v: VisitRow) => ({
  schedule_uuid: v.id,
  visit_date: v.visitDate,
  start_time: v.startTime,
  status: v.status,
  visit_type: v.visitType,
});

/** The next scheduled (or running) visit of each patient from `today` on. */
export async function nextVisitsOf(tx: Db, ownerId: string, patientIds: string[], today: string): Promise<Map<string, VisitRow>> {
  if (patientIds.length === 0) return new Map();
  const rows = await tx
    .select()
    .from(visits)
    .where(
      and(
        eq(visits.ownerId, ownerId),
        inArray(visits.patientId, patientIds),
        inArray(visits.status, ['scheduled', 'in_progress']),
        gte(visits.visitDate, today),
        isNull(visits.deletedAt),
      ),
    )
    .orderBy(asc(visits.visitDate), asc(visits.startTime));
  const out = new Map<string, VisitRow>();
  for (const v of rows) if (v.patientId && !out.has(v.patientId)) out.set(v.patientId, v);
  return out;
}

/** The date of each patient's last completed visit. */
export async function lastVisitDatesOf(tx: Db, ownerId: string, patientIds: string[]): Promise<Map<string, string>> {
  if (patientIds.length === 0) return new Map();
  const rows = await tx
    .select({ patientId: visits.patientId, last: max(visits.visitDate) })
    .from(visits)
    .where(and(eq(visits.ownerId, ownerId), inArray(visits.patientId, patientIds), eq(visits.status, 'completed'), isNull(visits.deletedAt)))
    .groupBy(visits.patientId);
  return new Map(rows.filter((r) => r.patientId && r.last).map((r) => [r.patientId as string, r.last as string]));
}

/** The clinician's time zone (settings read through clinician-settings.ts, defaults included). */
export async function timeZoneOf(tx: Db, userId: string): Promise<string> {
  return (await readClinicianSettings(tx, userId)).time_zone;
}

/** `count(*)` as a JS number on both drivers. */
export const countInt = sql<number>`cast(count(*) as int)`;
