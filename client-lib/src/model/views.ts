/**
 * Reads, all from the device database: the feed's rows for what is asked (plus whatever the
 * outbox refers to), the overlay on top, then the REST record shapes assembled from them.
 */
import type * as z from 'zod';
import type { visit as visitSchema } from '@fieldchart/schema/api';
import type { MileageRow, NotificationRow, PatientRow, ReferralRow, SoapNoteRow, TimerEventRow, VisitRow } from '@fieldchart/schema/sync';
import { readFeedRows } from '../storage/feed-store.ts';
import type { Queryable } from '../storage/local-db.ts';
import type { OutboxEntry } from '../storage/outbox.ts';
import type { SoapSection } from '../sync/drafts.ts';
import { sortEvents } from './evv.ts';
import { applyOverlay, emptyWorkingSet, referencedIds, type WorkingSet } from './overlay.ts';

/** A visit as the REST API's `Visit` record, assembled on the device. */
export type Visit = z.infer<typeof visitSchema>;

/** A patient as the feed carries it, with the patient's referrals. */
export interface Patient extends PatientRow {
  readonly referrals: ReferralRow[];
}

export type VisitSelection = { readonly date: string } | { readonly after: string; readonly until?: string } | { readonly uuid: string };


/** Reads the section texts of a visit's draft on the device (for a submitted, unsynced note). */
export type DraftTexts = (scheduleUuid: string) => Promise<Record<SoapSection, string> | null>;

async function loadVisitSet(db: Queryable, entries: readonly OutboxEntry[], sel: VisitSelection): Promise<WorkingSet> {
  const ws = emptyWorkingSet();
  const ref = referencedIds(entries);
  let where: string;
  let params: unknown[];
  if ('uuid' in sel) {
    where = 'id = $1';
    params = [sel.uuid];
  } else if ('date' in sel) {
    where = 'visit_date = $1';
    params = [sel.date];
  } else {
    where = sel.until ? 'visit_date > $1 and visit_date <= $3' : 'visit_date > $1';
    params = sel.until ? [sel.after, null, sel.until] : [sel.after, null];
  }
  if (params.length < 2) params.push(null);
  params[1] = ref.visits;
  const visits = await readFeedRows<VisitRow>(db, `tbl = 'visits' and (${where} or id = any($2::text[]))`, params);
  for (const v of visits) ws.visits.set(v.row.uuid, v.row);
  const visitIds = [...new Set([...ws.visits.keys(), ...ref.visits])];
  const children = await readFeedRows<TimerEventRow & SoapNoteRow & MileageRow>(
    db,
    `tbl in ('timer_events', 'soap_notes', 'visit_mileage') and schedule_uuid = any($1::text[])`,
    [visitIds],
  );
  for (const c of children) {
    const s = c.row.schedule_uuid;
    if (c.tbl === 'timer_events') ws.events.set(s, [...(ws.events.get(s) ?? []), c.row]);
    else if (c.tbl === 'soap_notes') ws.notes.set(s, c.row);
    else ws.mileage.set(s, c.row);
  }
  const patientIds = [...new Set([...[...ws.visits.values()].flatMap((v) => (v.patient_uuid ? [v.patient_uuid] : [])), ...ref.patients])];
  await loadPatients(db, ws, patientIds);
  applyOverlay(ws, entries);
  return ws;
}

async function loadPatients(db: Queryable, ws: WorkingSet, ids: readonly string[] | null): Promise<void> {
  const rows = await readFeedRows<PatientRow | ReferralRow>(db, `tbl in ('patients', 'patient_referrals') and ($1::text[] is null or patient_uuid = any($1::text[]))`, [ids]);
  for (const r of rows) {
    if (r.tbl === 'patients') ws.patients.set(r.row.uuid, r.row as PatientRow);
    else ws.referrals.set(r.row.uuid, r.row as ReferralRow);
  }
}

function matches(v: VisitRow, sel: VisitSelection): boolean {
  if ('uuid' in sel) return v.uuid === sel.uuid;
  if ('date' in sel) return v.visit_date === sel.date;
  return v.visit_date > sel.after && (!sel.until || v.visit_date <= sel.until);
}

/** Visits of the selection as `Visit` records (`soap_note` only when `withNote`). */
export async function readVisits(
  db: Queryable,
  entries: readonly OutboxEntry[],
  sel: VisitSelection,
  opts: { withNote: boolean; draftTexts: DraftTexts },
): Promise<Visit[]> {
  const ws = await loadVisitSet(db, entries, sel);
  const chosen = [...ws.visits.values()].filter((v) => matches(v, sel));
  return Promise.all(chosen.map((v) => assembleVisit(ws, v, opts)));
}

async function assembleVisit(ws: WorkingSet, v: VisitRow, opts: { withNote: boolean; draftTexts: DraftTexts }): Promise<Visit> {
  const p = v.patient_uuid ? ws.patients.get(v.patient_uuid) : undefined;
  const m = ws.mileage.get(v.uuid);
  const note = ws.notes.get(v.uuid);
  const pending = ws.pendingNotes.get(v.uuid);
  let soap: Visit['soap_note'] = null;
  if (opts.withNote && v.status === 'completed') {
    if (note) {
      const { schedule_uuid: _s, ...rest } = note;
      soap = { ...rest, signature: null };
    } else if (pending) {
      const texts = await opts.draftTexts(v.uuid);
      soap = {
        uuid: `local-${pending.mutationId}`,
        subjective: texts?.subjective ?? '',
        objective: texts?.objective ?? '',
        assessment: texts?.assessment ?? '',
        plan: texts?.plan ?? '',
        vital_signs: pending.vitalSigns,
        vital_flags: [],
        signed: pending.signature !== null,
        signed_at: pending.signature !== null ? pending.clientTime : null,
        signature: null,
        signature_mime: null,
        review_flags: [],
        submitted_at: pending.clientTime,
      };
    }
  }
  return {
    uuid: v.uuid,
    schedule_uuid: v.uuid,
    patient_uuid: v.patient_uuid,
    referral_uuid: v.referral_uuid,
    patient: p ? { uuid: p.uuid, first_name: p.first_name, last_name: p.last_name } : null,
    visit_date: v.visit_date,
    start_time: v.start_time,
    duration_minutes: v.duration_minutes,
    status: v.status,
    visit_type: v.visit_type,
    address: v.address,
    notes: v.notes,
    ai_assisted: v.ai_assisted,
    has_note: note !== undefined || pending !== undefined,
    completed_at: v.completed_at,
    evv: v.evv,
    timer_events: sortEvents(ws.events.get(v.uuid) ?? []).map(({ schedule_uuid: _s, ...e }) => e),
    mileage: m ? { total_miles: m.total_miles, travel_miles: m.travel_miles, onsite_miles: m.onsite_miles, recorded_at: m.recorded_at } : null,
    soap_note: soap,
    created_at: v.created_at,
    updated_at: v.updated_at,
  };
}

/** The REST lists' order: by date, then start time, then creation. */
export function byVisitTime(a: Visit, b: Visit): number {
  return a.visit_date.localeCompare(b.visit_date) || a.start_time.localeCompare(b.start_time) || a.created_at.localeCompare(b.created_at);
}

/** Patients (all, or one) with the overlay, by last then first name. */
export async function readPatients(db: Queryable, entries: readonly OutboxEntry[], uuid: string | null): Promise<Patient[]> {
  const ws = emptyWorkingSet();
  await loadPatients(db, ws, uuid ? [uuid] : null);
  applyOverlay(ws, entries);
  const referralsOf = new Map<string, ReferralRow[]>();
  for (const r of ws.referrals.values()) referralsOf.set(r.patient_uuid, [...(referralsOf.get(r.patient_uuid) ?? []), r]);
  return [...ws.patients.values()]
    .filter((p) => uuid === null || p.uuid === uuid)
    .sort((a, b) => a.last_name.localeCompare(b.last_name) || a.first_name.localeCompare(b.first_name) || a.uuid.localeCompare(b.uuid))
    .map((p) => ({ ...p, referrals: (referralsOf.get(p.uuid) ?? []).sort((a, b) => a.created_at.localeCompare(b.created_at)) }));
}

/** A notification as the feed carries it (the REST `Notification` record). */
export type DeviceNotification = NotificationRow;

/** The user's notifications on the device, newest first; `unreadOnly` keeps the unread ones. */
export async function readNotifications(db: Queryable, opts: { unreadOnly?: boolean } = {}): Promise<DeviceNotification[]> {
  // Read state and time are inside the sealed row: chosen and ordered here, not in SQL.
  const rows = await readFeedRows<NotificationRow>(db, `tbl = 'notifications'`, []);
  return rows
    .filter((r) => !opts.unreadOnly || r.row.is_read === false)
    .sort((a, b) => (a.row.created_at < b.row.created_at ? 1 : a.row.created_at > b.row.created_at ? -1 : a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
    .map((r) => r.row);
}
