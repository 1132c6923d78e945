/**
 * Report fixtures written as rows (the visits and patients endpoints were being built in
 * parallel): PHI columns sealed with the server's key ring under the documented AAD
 * (`<table>.<column>:<row id>`), so the reports decrypt them exactly as production rows.
 */
import { randomUUID } from 'node:crypto';
import { patients, soapNotes, visitMileage, visits } from '@fieldchart/schema/db';
import type { TestServer } from '../../helpers/test-server.ts';

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

export async function addPatient(server: TestServer, ownerId: string, name: { first: string; last: string }): Promise<string> {
  const { db } = server.runtime.database;
  const { phi } = server.runtime.services;
  const id = randomUUID();
  await db.insert(patients).values({
    id,
    ownerId,
    firstNameEnc: phi.seal(name.first, 'patients', 'first_name_enc', id) as string,
    lastNameEnc: phi.seal(name.last, 'patients', 'last_name_enc', id) as string,
  });
  return id;
}

export interface VisitFixture {
  date: string;
  start?: string;
  status?: 'scheduled' | 'in_progress' | 'completed' | 'cancelled' | 'missed';
  type?: string;
  ai?: boolean;
  patientId?: string;
  arrivedAt?: Date;
  driveSeconds?: number;
  onsiteSeconds?: number;
  documentationSeconds?: number;
  note?: { submittedAt: Date; signed?: boolean; reviewFlags?: string[]; vitalFlags?: string[] };
  mileage?: { total: number; travel?: number; onsite?: number };
  deleted?: boolean;
  /** The organization the visit was recorded under (scheduling stamps the seat's); none by default. */
  organizationId?: string | null;
}

export async function addVisit(server: TestServer, ownerId: string, v: VisitFixture): Promise<string> {
  const { db } = server.runtime.database;
  const { phi } = server.runtime.services;
  const id = randomUUID();
  await db.insert(visits).values({
    id,
    ownerId,
    organizationId: v.organizationId ?? null,
    patientId: v.patientId ?? null,
    visitDate: v.date,
    startTime: v.start ?? '09:00',
    status: v.status ?? 'scheduled',
    visitType: v.type ?? 'routine',
    aiAssisted: v.ai ?? false,
    arrivedAt: v.arrivedAt ?? null,
    driveSeconds: v.driveSeconds ?? null,
    onsiteSeconds: v.onsiteSeconds ?? null,
    documentationSeconds: v.documentationSeconds ?? null,
    completedAt: v.status === 'completed' ? (v.note?.submittedAt ?? v.arrivedAt ?? null) : null,
    deletedAt: v.deleted ? new Date() : null,
  });
  if (v.note) {
    const noteId = randomUUID();
    const seal = (col: string, text: string) => phi.seal(text, 'soap_notes', col, noteId) as string;
    await db.insert(soapNotes).values({
      id: noteId,
      visitId: id,
      ownerId,
      subjectiveEnc: seal('subjective_enc', 'Reports less knee pain.'),
      objectiveEnc: seal('objective_enc', 'Gait steady with cane.'),
      assessmentEnc: seal('assessment_enc', 'Progressing.'),
      planEnc: seal('plan_enc', 'Continue plan of care.'),
      signedAt: v.note.signed === false ? null : v.note.submittedAt,
      signatureEnc: v.note.signed === false ? null : seal('signature_enc', PNG),
      signatureMime: v.note.signed === false ? null : 'image/png',
      reviewFlags: v.note.reviewFlags ?? [],
      vitalFlags: v.note.vitalFlags ?? [],
      submittedAt: v.note.submittedAt,
    });
  }
  if (v.mileage) {
    await db.insert(visitMileage).values({
      visitId: id,
      ownerId,
      totalMiles: v.mileage.total,
      travelMiles: v.mileage.travel ?? null,
      onsiteMiles: v.mileage.onsite ?? null,
      recordedAt: new Date(),
    });
  }
  return id;
}

/** `hours` after `d`. */
export const hoursAfter = (d: Date, hours: number) => new Date(d.getTime() + hours * 3600_000);

/** A fresh access token for `user` at the clock's current time (after the test moved the clock). */
export async function signIn(server: TestServer, user: { email: string; password: string }): Promise<string> {
  const res = await server.api('POST', '/sign-in', { body: { email: user.email, password: user.password } });
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.token as string;
}
