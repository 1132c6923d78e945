/**
 * After `whenSynced()`, every local read equals the server's row (protocol 2): one device
 * online on a quiet server writes each kind of overlay — a patient created and updated, a
 * visit scheduled, timer events, mileage, a submitted note — and after each write's
 * `whenSynced()` the device's read of it is compared with the REST answer. The device's own
 * optimistic copy (its write time, its derived values) must be gone by then: the `synced` that
 * follows the acks says through which mutation the feed has brought the server's rows.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FieldchartClient, Patient, Visit } from '../../client-lib/src/index.ts';
import { forEachBackend } from '../helpers/backends.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { details, utcClinician, type User } from '../server/visits/visit-fixtures.ts';
import { ev, openClient } from './support.ts';

const WAIT = { timeoutMs: 60_000 };
const today = () => new Date().toISOString().slice(0, 10);
const instant = (v: unknown) => (typeof v === 'string' ? new Date(v).toISOString() : v);

/** A patient as both sides carry it (the feed row's fields), times as instants. */
function patientFields(p: Record<string, unknown>) {
  return {
    uuid: p.uuid,
    first_name: p.first_name,
    last_name: p.last_name,
    email: p.email ?? null,
    phone: p.phone ?? null,
    address: p.address ?? null,
    created_at: instant(p.created_at),
    updated_at: instant(p.updated_at),
  };
}

/** What the device assembles of a visit, against GET /visit-details. */
function visitFields(v: Visit) {
  return {
    uuid: v.uuid,
    status: v.status,
    visit_date: v.visit_date,
    start_time: v.start_time,
    duration_minutes: v.duration_minutes,
    address: v.address,
    completed_at: instant(v.completed_at),
    created_at: instant(v.created_at),
    updated_at: instant(v.updated_at),
    evv: v.evv,
    has_note: v.has_note,
    timer_events: v.timer_events.map((e) => ({ ...e, event_time: instant(e.event_time) })),
    mileage: v.mileage ? { ...v.mileage, recorded_at: instant(v.mileage.recorded_at) } : null,
    soap_note: v.soap_note
      ? { uuid: v.soap_note.uuid, signed: v.soap_note.signed, submitted_at: instant(v.soap_note.submitted_at), vital_signs: v.soap_note.vital_signs, plan: v.soap_note.plan }
      : null,
  };
}

forEachBackend('offline client: local reads equal the server after whenSynced (protocol 2)', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  async function restPatient(user: User, uuid: string): Promise<Record<string, unknown>> {
    const res = await server.api('GET', '/patient/my-patients?per_page=100', { token: user.token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const found = (res.body.data as Array<Record<string, unknown>>).find((p) => p.uuid === uuid);
    assert.ok(found, 'the server has the patient');
    return found;
  }

  async function samePatient(client: FieldchartClient, user: User, uuid: string): Promise<void> {
    const local = (await client.patients.get(uuid)) as Patient;
    assert.deepEqual(patientFields(local as unknown as Record<string, unknown>), patientFields(await restPatient(user, uuid)));
  }

  async function sameVisit(client: FieldchartClient, user: User, uuid: string): Promise<void> {
    const local = (await client.visits.get(uuid)) as Visit;
    assert.ok(local, 'the device has the visit');
    assert.deepEqual(visitFields(local), visitFields((await details(server, user, uuid)) as Visit));
  }

  test('every overlay kind gives way to the server’s row when whenSynced resolves, with nothing else written', async () => {
    const user = await utcClinician(server);
    const client = await openClient(server.url, 'memory://', { submitWaitMs: 60_000 });
    try {
      await client.signIn({ email: user.email, password: user.password });
      await client.sync.whenSynced(WAIT);

      // Patients: created, then updated (the server stamps updated_at, not the device).
      const { uuid: patient } = await client.patients.create({ first_name: 'Quiet', last_name: 'Server', address: '1 Main St' });
      await client.sync.whenSynced(WAIT);
      await samePatient(client, user, patient);
      await new Promise((r) => setTimeout(r, 20)); // the device's clock moves on: its write time would differ
      await client.patients.update(patient, { last_name: 'Server-Updated', phone: '555-0100' });
      await client.sync.whenSynced(WAIT);
      await samePatient(client, user, patient);

      // A visit scheduled on the device.
      const { uuid: visit } = await client.visits.schedule({ patient_uuid: patient, visit_date: today(), start_time: '09:00' });
      await client.sync.whenSynced(WAIT);
      await sameVisit(client, user, visit);

      // Timer events: the server's EVV, status and updated_at.
      await client.visits.recordTimerEvents(visit, [ev('start_travel', `${today()}T08:30:00.000Z`), ev('arrive', `${today()}T08:55:00.000Z`)]);
      await client.sync.whenSynced(WAIT);
      await sameVisit(client, user, visit);

      // Mileage.
      await client.visits.setMileage(visit, { total_miles: 12.345, travel_miles: 10 });
      await client.sync.whenSynced(WAIT);
      await sameVisit(client, user, visit);

      // A note, with the remaining steps: the server's completed_at and note, not the device's.
      await client.visits.recordTimerEvents(visit, [ev('start_documentation', `${today()}T09:40:00.000Z`)]);
      const doc = await client.drafts.open(visit);
      for (const section of client.drafts.sections) doc.getText(section).insert(0, `${section}: as discussed.`);
      await client.notes.submit(visit, { vital_signs: { heart_rate: 70 } });
      await client.sync.whenSynced(WAIT);
      assert.deepEqual(await client.rejections.list(), []);
      await sameVisit(client, user, visit);
      const done = await client.visits.get(visit);
      assert.equal(done?.status, 'completed');
      assert.equal(done?.soap_note?.plan, 'plan: as discussed.', 'the device shows the server’s note');

      assert.equal(client.sync.status.pending, 0);
    } finally {
      await client.close();
    }
  });
});
