/**
 * The optimistic view: the server's rows with the outbox re-applied on top, in mutation order.
 * Nothing optimistic is ever written into the server's rows, so a rejected write rolls back by
 * leaving the outbox, and an acknowledged one gives way to the feed's rows (each step below
 * applies only where the server's copy does not have it yet).
 */
import { defaultDurationMinutes } from '@fieldchart/schema/rules';
import type { MileageRow, PatientRow, ReferralRow, SoapNoteRow, TimerEventRow, VisitRow } from '@fieldchart/schema/sync';
import type { OutboxEntry } from '../storage/outbox.ts';
import { EMPTY_EVV, deriveEvv, sortEvents } from './evv.ts';

/** A note the device submitted that the server's rows do not show yet. */
export interface PendingNote {
  readonly mutationId: number;
  readonly clientTime: string;
  readonly vitalSigns: SoapNoteRow['vital_signs'];
  readonly signature: string | null;
}

/** The rows a read needs, keyed for the overlay. */
export interface WorkingSet {
  readonly patients: Map<string, PatientRow>;
  readonly referrals: Map<string, ReferralRow>;
  readonly visits: Map<string, VisitRow>;
  /** By visit. */
  readonly events: Map<string, TimerEventRow[]>;
  readonly mileage: Map<string, MileageRow>;
  readonly notes: Map<string, SoapNoteRow>;
  readonly pendingNotes: Map<string, PendingNote>;
}

export function emptyWorkingSet(): WorkingSet {
  return { patients: new Map(), referrals: new Map(), visits: new Map(), events: new Map(), mileage: new Map(), notes: new Map(), pendingNotes: new Map() };
}

type Args = Record<string, unknown>;
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);
const iso = (t: string) => new Date(t).toISOString();

/** Ids the outbox refers to: a read loads their server rows so the overlay knows what exists. */
export function referencedIds(entries: readonly OutboxEntry[]): { visits: string[]; patients: string[] } {
  const visits = new Set<string>();
  const patients = new Set<string>();
  for (const e of entries) {
    if (e.schedule_uuid) visits.add(e.schedule_uuid);
    if (e.name === 'patient.create' || e.name === 'patient.update') {
      const id = str(e.args.uuid);
      if (id) patients.add(id);
    }
    if (e.name === 'visit.schedule') {
      const id = str(e.args.patient_uuid);
      if (id) patients.add(id);
    }
  }
  return { visits: [...visits], patients: [...patients] };
}

export function applyOverlay(ws: WorkingSet, entries: readonly OutboxEntry[]): void {
  for (const e of entries) {
    switch (e.name) {
      case 'patient.create':
        createPatient(ws, e);
        break;
      case 'patient.update':
        updatePatient(ws, e.args, e.client_time);
        break;
      case 'visit.schedule':
        scheduleVisit(ws, e);
        break;
      case 'visit.timer_events':
        addTimerEvents(ws, e);
        break;
      case 'visit.mileage':
        setMileage(ws, e.args);
        break;
      case 'note.submit':
        submitNote(ws, e);
        break;
    }
  }
}

function createPatient(ws: WorkingSet, e: OutboxEntry): void {
  const a = e.args;
  const uuid = str(a.uuid);
  if (!uuid || ws.patients.has(uuid)) return;
  ws.patients.set(uuid, {
    uuid,
    first_name: String(a.first_name ?? ''),
    last_name: String(a.last_name ?? ''),
    email: str(a.email),
    phone: str(a.phone),
    address: str(a.address),
    created_at: e.client_time,
    updated_at: e.client_time,
  });
  const referralUuid = str(a.referral_uuid);
  if (referralUuid && !ws.referrals.has(referralUuid)) {
    const r = (a.referral ?? {}) as Args;
    ws.referrals.set(referralUuid, {
      uuid: referralUuid,
      patient_uuid: uuid,
      status: 'open',
      discipline: str(r.discipline),
      diagnosis_codes: Array.isArray(r.diagnosis_codes) ? r.diagnosis_codes.map(String) : [],
      referral_source: str(r.referral_source),
      start_of_care: str(r.start_of_care),
      ordered_frequency: str(r.ordered_frequency),
      created_at: e.client_time,
      discharged_at: null,
    });
  }
}

function updatePatient(ws: WorkingSet, a: Args, clientTime: string): void {
  const uuid = str(a.uuid);
  const current = uuid ? ws.patients.get(uuid) : undefined;
  if (!uuid || !current) return;
  const next: PatientRow = { ...current, updated_at: clientTime };
  for (const k of ['first_name', 'last_name'] as const) if (typeof a[k] === 'string') next[k] = a[k];
  // Present-and-null clears the field, as in the REST update.
  for (const k of ['email', 'phone', 'address'] as const) if (k in a && a[k] !== undefined) next[k] = str(a[k]);
  ws.patients.set(uuid, next);
}

function openReferralOf(ws: WorkingSet, patientUuid: string): string | null {
  let best: ReferralRow | null = null;
  for (const r of ws.referrals.values()) {
    if (r.patient_uuid === patientUuid && r.status === 'open' && (!best || r.created_at > best.created_at)) best = r;
  }
  return best?.uuid ?? null;
}

function scheduleVisit(ws: WorkingSet, e: OutboxEntry): void {
  const a = e.args;
  const uuid = str(a.uuid);
  if (!uuid || ws.visits.has(uuid)) return;
  const patientUuid = str(a.patient_uuid);
  const patient = patientUuid ? ws.patients.get(patientUuid) : undefined;
  const visitType = str(a.visit_type) ?? 'routine';
  ws.visits.set(uuid, {
    uuid,
    patient_uuid: patientUuid,
    referral_uuid: patientUuid ? openReferralOf(ws, patientUuid) : null,
    visit_date: String(a.visit_date),
    start_time: String(a.start_time),
    duration_minutes: num(a.duration_minutes) ?? defaultDurationMinutes(visitType),
    status: 'scheduled',
    visit_type: visitType,
    address: str(a.address) ?? patient?.address ?? null,
    notes: str(a.notes),
    ai_assisted: false,
    completed_at: null,
    created_at: e.client_time,
    updated_at: e.client_time,
    evv: EMPTY_EVV,
  });
}

function addTimerEvents(ws: WorkingSet, e: OutboxEntry): void {
  const scheduleUuid = str(e.args.schedule_uuid);
  const visit = scheduleUuid ? ws.visits.get(scheduleUuid) : undefined;
  if (!scheduleUuid || !visit) return;
  const events = [...(ws.events.get(scheduleUuid) ?? [])];
  const ids = Array.isArray(e.local.event_uuids) ? (e.local.event_uuids as string[]) : [];
  const incoming = (Array.isArray(e.args.events) ? (e.args.events as Args[]) : []).map((ev, i) => ({
    uuid: ids[i] ?? `local-${e.mutation_id}-${i}`,
    schedule_uuid: scheduleUuid,
    event_type: String(ev.event_type) as TimerEventRow['event_type'],
    event_time: iso(String(ev.event_time)),
    latitude: num(ev.latitude),
    longitude: num(ev.longitude),
    accuracy: num(ev.accuracy),
  }));
  let added = false;
  for (const ev of sortEvents(incoming)) {
    // One event per step: a step already recorded (by the server or earlier here) stays.
    if (events.some((x) => x.event_type === ev.event_type)) continue;
    events.push(ev);
    added = true;
  }
  if (!added) return;
  const sorted = sortEvents(events);
  ws.events.set(scheduleUuid, sorted);
  const arrived = sorted.some((x) => x.event_type === 'arrive');
  ws.visits.set(scheduleUuid, {
    ...visit,
    evv: deriveEvv(sorted),
    status: visit.status === 'scheduled' && arrived ? 'in_progress' : visit.status,
    updated_at: e.client_time > visit.updated_at ? e.client_time : visit.updated_at,
  });
}

function setMileage(ws: WorkingSet, a: Args): void {
  const scheduleUuid = str(a.uuid);
  const m = (a.mileage ?? {}) as Args;
  const recordedAt = str(m.recorded_at);
  if (!scheduleUuid || !recordedAt || typeof m.total_miles !== 'number') return;
  const current = ws.mileage.get(scheduleUuid);
  // Last writer wins by the device's recorded_at, as on the server.
  if (current && Date.parse(current.recorded_at) > Date.parse(recordedAt)) return;
  ws.mileage.set(scheduleUuid, {
    schedule_uuid: scheduleUuid,
    total_miles: m.total_miles,
    travel_miles: num(m.travel_miles),
    onsite_miles: num(m.onsite_miles),
    recorded_at: iso(recordedAt),
  });
}

function submitNote(ws: WorkingSet, e: OutboxEntry): void {
  const scheduleUuid = str(e.args.schedule_uuid);
  const visit = scheduleUuid ? ws.visits.get(scheduleUuid) : undefined;
  if (!scheduleUuid || !visit || ws.notes.has(scheduleUuid) || visit.status === 'completed') return;
  ws.pendingNotes.set(scheduleUuid, {
    mutationId: e.mutation_id,
    clientTime: e.client_time,
    vitalSigns: (e.args.vital_signs ?? null) as SoapNoteRow['vital_signs'],
    signature: str(e.args.signature),
  });
  ws.visits.set(scheduleUuid, { ...visit, status: 'completed', completed_at: e.client_time, updated_at: e.client_time });
}
