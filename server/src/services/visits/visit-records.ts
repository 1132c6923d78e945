/**
 * Data access shared by the visit services: the caller-scoped lookup (a foreign visit is
 * indistinguishable from a missing one) and the mapping of rows to the API's Visit record,
 * PHI opened with the key ring.
 */
import { and, asc, eq, inArray, isNull, sql, type SQL } from 'drizzle-orm';
import type * as z from 'zod';
import type { visit as visitSchema } from '@fieldchart/schema/api';
import { soapNotes, timerEvents, visitMileage, visits } from '@fieldchart/schema/db';
import type { Db } from '../../db/database.ts';
import { rowFromJson } from '../../db/one-statement.ts';
import { NotFound } from '../../errors.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import { patientBriefs, type PatientBrief } from '../reports/visit-facts.ts';
import { minutesOf as minutes } from '@fieldchart/schema/rules';
import { TIMER_SEQUENCE, type TimerEventType } from '@fieldchart/schema/rules';
import { isUuid } from '../ids.ts';

export type VisitRecord = z.infer<typeof visitSchema>;
export type VisitRow = typeof visits.$inferSelect;
type TimerEventRow = typeof timerEvents.$inferSelect;
type MileageRow = typeof visitMileage.$inferSelect;
type SoapNoteRow = typeof soapNotes.$inferSelect;

/** What a Visit record is built from besides the visit rows themselves. */
interface VisitChildren {
  readonly patientById: ReadonlyMap<string, PatientBrief>;
  readonly eventRows: readonly TimerEventRow[];
  readonly mileageRows: readonly MileageRow[];
  /** Whole notes (details), or none (lists). */
  readonly noteRows: readonly SoapNoteRow[];
  readonly notedVisits: ReadonlySet<string>;
}

/** One visit as `visitJson` writes it. */
export interface VisitJson {
  readonly v: Record<string, unknown>;
  readonly patient: { id: string; first: string; last: string } | null;
  readonly events: Array<Record<string, unknown>>;
  readonly mileage: Record<string, unknown> | null;
  readonly notes: Array<Record<string, unknown>> | null;
  readonly noted: boolean;
}

/**
 * A visit row `v` (an alias in the enclosing statement) with what its record needs, as one
 * JSON value: the owner's patient's sealed names, live timer events, mileage, and the note
 * itself (`soap`) or only whether one exists. The one-statement reads select this.
 */
export function visitJson(ownerId: string, opts: { soap: boolean }): SQL {
  return sql`json_build_object('v', to_json(v),
    'patient', (select json_build_object('id', p.id, 'first', p.first_name_enc, 'last', p.last_name_enc) from patients p where p.id = v.patient_id and p.owner_id = ${ownerId}::uuid),
    'events', (select coalesce(json_agg(to_json(e)), '[]') from timer_events e where e.visit_id = v.id and e.deleted_at is null),
    'mileage', (select to_json(m) from visit_mileage m where m.visit_id = v.id and m.deleted_at is null),
    'notes', ${opts.soap ? sql`(select coalesce(json_agg(to_json(n)), '[]') from soap_notes n where n.visit_id = v.id and n.deleted_at is null)` : sql`null`},
    'noted', exists (select 1 from soap_notes n where n.visit_id = v.id and n.deleted_at is null))`;
}


/** The caller's live visit, locked for update when asked; 404 for unknown, foreign or malformed ids. */
export async function findOwnedVisit(tx: Db, ownerId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<VisitRow> {
  if (!isUuid(id)) throw visitNotFound();
  const query = tx
    .select()
    .from(visits)
    .where(and(eq(visits.id, id), eq(visits.ownerId, ownerId), isNull(visits.deletedAt)));
  const [row] = opts.forUpdate ? await query.for('update') : await query;
  if (!row) throw visitNotFound();
  return row;
}

export const visitNotFound = () => new NotFound('Visit not found', 'visit_not_found');

const place = (lat: number | null, lng: number | null, accuracy: number | null) =>
  lat === null || lng === null ? null : { latitude: lat, longitude: lng, accuracy };

export function createVisitRecords(deps: { phi: PhiCrypto }) {
  const { phi } = deps;

  /** Full records for `rows` (any order kept); `soap` loads the note of completed visits. */
  async function toRecords(tx: Db, ownerId: string, rows: readonly VisitRow[], opts: { soap: boolean }): Promise<VisitRecord[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.id);
    // One after another: a transaction is one connection on both drivers.
    const patientIds = rows.map((r) => r.patientId);
    const patientById = await patientBriefs(tx, phi, ownerId, patientIds);
    const eventRows = await tx
      .select()
      .from(timerEvents)
      .where(and(inArray(timerEvents.visitId, ids), isNull(timerEvents.deletedAt)))
      .orderBy(asc(timerEvents.eventTime));
    const mileageRows = await tx
      .select()
      .from(visitMileage)
      .where(and(inArray(visitMileage.visitId, ids), isNull(visitMileage.deletedAt)));
    // Lists only say whether a note exists: whole rows would carry the sealed note text and
    // signature (up to 512 KB each) for nothing.
    const liveNotes = and(inArray(soapNotes.visitId, ids), isNull(soapNotes.deletedAt));
    const noteRows = opts.soap ? await tx.select().from(soapNotes).where(liveNotes) : [];
    const notedVisits = new Set(
      opts.soap ? noteRows.map((n) => n.visitId) : (await tx.select({ visitId: soapNotes.visitId }).from(soapNotes).where(liveNotes)).map((n) => n.visitId),
    );
    return assemble(rows, { patientById, eventRows, mileageRows, noteRows, notedVisits }, opts);
  }

  /** Records from `visitJson` values, in their order. */
  function fromJson(items: readonly VisitJson[], opts: { soap: boolean }): VisitRecord[] {
    const rows: VisitRow[] = [];
    const patientById = new Map<string, PatientBrief>();
    const eventRows: TimerEventRow[] = [];
    const mileageRows: MileageRow[] = [];
    const noteRows: SoapNoteRow[] = [];
    const notedVisits = new Set<string>();
    for (const item of items) {
      const row = rowFromJson(visits, item.v);
      rows.push(row);
      const p = item.patient;
      if (p) {
        patientById.set(p.id, {
          uuid: p.id,
          first_name: phi.open(p.first, 'patients', 'first_name_enc', p.id) ?? '',
          last_name: phi.open(p.last, 'patients', 'last_name_enc', p.id) ?? '',
        });
      }
      for (const e of item.events) eventRows.push(rowFromJson(timerEvents, e));
      if (item.mileage) mileageRows.push(rowFromJson(visitMileage, item.mileage));
      for (const n of item.notes ?? []) noteRows.push(rowFromJson(soapNotes, n));
      if (item.noted) notedVisits.add(row.id);
    }
    return assemble(rows, { patientById, eventRows, mileageRows, noteRows, notedVisits }, opts);
  }

  function assemble(rows: readonly VisitRow[], c: VisitChildren, opts: { soap: boolean }): VisitRecord[] {
    const rankOf = (t: string) => TIMER_SEQUENCE.indexOf(t as TimerEventType);
    const eventsOf = new Map<string, VisitRecord['timer_events']>();
    for (const e of [...c.eventRows].sort((a, b) => a.eventTime.getTime() - b.eventTime.getTime() || rankOf(a.eventType) - rankOf(b.eventType))) {
      const list = eventsOf.get(e.visitId) ?? [];
      list.push({
        uuid: e.id,
        event_type: e.eventType as TimerEventType,
        event_time: e.eventTime.toISOString(),
        latitude: e.latitude,
        longitude: e.longitude,
        accuracy: e.accuracy,
      });
      eventsOf.set(e.visitId, list);
    }
    const mileageOf = new Map(c.mileageRows.map((m) => [m.visitId, m]));
    const noteOf = new Map(c.noteRows.map((n) => [n.visitId, n]));

    return rows.map((v): VisitRecord => {
      const m = mileageOf.get(v.id);
      const n = noteOf.get(v.id);
      const base = visitFieldsOf(phi, v);
      return {
        ...base,
        schedule_uuid: v.id,
        patient: v.patientId ? (c.patientById.get(v.patientId) ?? null) : null,
        has_note: c.notedVisits.has(v.id),
        timer_events: eventsOf.get(v.id) ?? [],
        mileage: m
          ? { total_miles: m.totalMiles, travel_miles: m.travelMiles, onsite_miles: m.onsiteMiles, recorded_at: m.recordedAt.toISOString() }
          : null,
        soap_note: opts.soap && n && v.status === 'completed' ? soapRecordOf(phi, n) : null,
      };
    });
  }

  return { toRecords, fromJson };
}

export type VisitRecords = ReturnType<typeof createVisitRecords>;

/** A visit's own fields (no patient, events, mileage or note): the Visit record's core and the sync feed's row. */
export function visitFieldsOf(phi: PhiCrypto, v: VisitRow) {
  return {
    uuid: v.id,
    patient_uuid: v.patientId,
    referral_uuid: v.referralId,
    visit_date: v.visitDate,
    start_time: v.startTime,
    duration_minutes: v.durationMinutes,
    status: v.status as VisitRecord['status'],
    visit_type: v.visitType,
    address: phi.open(v.addressEnc, 'visits', 'address_enc', v.id),
    notes: phi.open(v.notesEnc, 'visits', 'notes_enc', v.id),
    ai_assisted: v.aiAssisted,
    completed_at: v.completedAt?.toISOString() ?? null,
    evv: {
      travel_started_at: v.travelStartedAt?.toISOString() ?? null,
      arrived_at: v.arrivedAt?.toISOString() ?? null,
      arrival_location: place(v.arrivalLat, v.arrivalLng, v.arrivalAccuracy),
      documentation_started_at: v.documentationStartedAt?.toISOString() ?? null,
      departed_at: v.departedAt?.toISOString() ?? null,
      departure_location: place(v.departureLat, v.departureLng, v.departureAccuracy),
      drive_minutes: minutes(v.driveSeconds),
      onsite_minutes: minutes(v.onsiteSeconds),
      documentation_minutes: minutes(v.documentationSeconds),
    },
    created_at: v.createdAt.toISOString(),
    updated_at: v.updatedAt.toISOString(),
  };
}

export function soapRecordOf(phi: PhiCrypto, n: typeof soapNotes.$inferSelect): NonNullable<VisitRecord['soap_note']> {
  const open = (value: string | null, column: string) => phi.open(value, 'soap_notes', column, n.id);
  const vitals = open(n.vitalSignsEnc, 'vital_signs_enc');
  const signature = open(n.signatureEnc, 'signature_enc');
  return {
    uuid: n.id,
    subjective: open(n.subjectiveEnc, 'subjective_enc') ?? '',
    objective: open(n.objectiveEnc, 'objective_enc') ?? '',
    assessment: open(n.assessmentEnc, 'assessment_enc') ?? '',
    plan: open(n.planEnc, 'plan_enc') ?? '',
    vital_signs: vitals === null ? null : (JSON.parse(vitals) as NonNullable<VisitRecord['soap_note']>['vital_signs']),
    vital_flags: n.vitalFlags,
    signed: signature !== null,
    signed_at: n.signedAt?.toISOString() ?? null,
    signature: signature === null ? null : `data:${n.signatureMime ?? 'image/png'};base64,${signature}`,
    signature_mime: n.signatureMime as 'image/png' | 'image/jpeg' | null,
    review_flags: n.reviewFlags,
    submitted_at: n.submittedAt.toISOString(),
  };
}