/**
 * Shared set-up for the patients suites: patients made through the API, and visits and
 * SOAP notes written straight into the database (sealed the way the visits area seals
 * them), so the chart endpoints can be tested whatever the visits endpoints do.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { soapNotes, visits } from '@fieldchart/schema/db';
import type { TestServer } from '../../helpers/test-server.ts';

export async function createPatient(server: TestServer, token: string, body: Record<string, unknown>): Promise<{ uuid: string; referral_uuid: string }> {
  const res = await server.api('POST', '/patient/create', { token, body });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data;
}

export async function plantVisit(
  server: TestServer,
  v: { ownerId: string; patientId: string; referralId?: string | null; date: string; time?: string; status?: string; address?: string; notes?: string },
): Promise<string> {
  const { services, database } = server.runtime;
  const id = randomUUID();
  await database.db.insert(visits).values({
    id,
    ownerId: v.ownerId,
    patientId: v.patientId,
    referralId: v.referralId ?? null,
    visitDate: v.date,
    startTime: v.time ?? '09:00',
    status: v.status ?? 'scheduled',
    addressEnc: services.phi.seal(v.address, 'visits', 'address_enc', id),
    notesEnc: services.phi.seal(v.notes, 'visits', 'notes_enc', id),
  });
  return id;
}

export async function plantNote(
  server: TestServer,
  n: { ownerId: string; visitId: string; text: string; vitals?: Record<string, number>; signed?: boolean },
): Promise<string> {
  const { services, database } = server.runtime;
  const id = randomUUID();
  const seal = (column: string, value: string | undefined) => services.phi.seal(value, 'soap_notes', column, id);
  await database.db.insert(soapNotes).values({
    id,
    visitId: n.visitId,
    ownerId: n.ownerId,
    subjectiveEnc: seal('subjective_enc', `S ${n.text}`)!,
    objectiveEnc: seal('objective_enc', `O ${n.text}`)!,
    assessmentEnc: seal('assessment_enc', `A ${n.text}`)!,
    planEnc: seal('plan_enc', `P ${n.text}`)!,
    vitalSignsEnc: seal('vital_signs_enc', n.vitals ? JSON.stringify(n.vitals) : undefined),
    signatureEnc: seal('signature_enc', n.signed ? `sig ${n.text}` : undefined),
    signatureMime: n.signed ? 'image/png' : null,
    signedAt: n.signed ? new Date() : null,
  });
  return id;
}

/** A calendar date `days` from today in UTC (the test clinicians keep the default time zone; ±2 days of slack suffices). */
export function dayFromToday(days: number): string {
  const d = new Date();
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}
