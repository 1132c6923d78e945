/**
 * Charts: chart details, scheduled visits by referral (month filter), the general summary
 * and the document list; and tenant isolation — a second clinician gets 404 on every
 * endpoint that takes the first one's uuid, and sees nothing of theirs in any list.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { createPatient, dayFromToday, plantNote, plantVisit } from './patient-fixtures.ts';

forEachBackend('patients: charts', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  async function clinicianWithChart() {
    const me = await registerUser(server);
    const p = await createPatient(server, me.token, {
      first_name: 'Chart',
      last_name: 'Holder',
      referral: { discipline: 'OT', ordered_frequency: '2w3', diagnosis_codes: ['R26.81'], referral_source: 'Dr. Who' },
    });
    const base = { ownerId: me.uuid, patientId: p.uuid, referralId: p.referral_uuid };
    const past = await plantVisit(server, { ...base, date: dayFromToday(-10), status: 'completed', address: '1 Main St' });
    const older = await plantVisit(server, { ...base, date: dayFromToday(-20), status: 'completed' });
    const soon = await plantVisit(server, { ...base, date: dayFromToday(5), time: '10:30', address: '2 Oak Ave' });
    const unlinked = await plantVisit(server, { ownerId: me.uuid, patientId: p.uuid, date: dayFromToday(12) });
    await plantNote(server, { ownerId: me.uuid, visitId: older, text: 'older', vitals: { heart_rate: 70 }, signed: true });
    await plantNote(server, { ownerId: me.uuid, visitId: past, text: 'latest', signed: false });
    return { me, p, visits: { past, older, soon, unlinked } };
  }

  test('chart details: patient, referral with counts, upcoming and recent visits, last note, latest vitals, signed documents', async () => {
    const { me, p, visits } = await clinicianWithChart();
    const res = await server.api('GET', `/patient/chart-details/${p.referral_uuid}`, { token: me.token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const c = res.body.data;
    assert.equal(c.patient.uuid, p.uuid);
    assert.equal(c.patient.full_name, 'Chart Holder');
    assert.equal(c.patient.referral_uuid, p.referral_uuid);
    assert.equal(c.patient.next_visit.schedule_uuid, visits.soon);
    assert.equal(c.patient.last_visit_date, dayFromToday(-10));
    assert.equal(c.referral.uuid, p.referral_uuid);
    assert.equal(c.referral.status, 'open');
    assert.equal(c.referral.discipline, 'OT');
    assert.deepEqual(c.referral.diagnosis_codes, ['R26.81']);
    assert.equal(c.referral.visits_ordered, 6);
    assert.equal(c.referral.visits_completed, 2);
    assert.equal(c.referral.visits_scheduled, 2);
    assert.deepEqual(c.upcoming_visits.map((v: { schedule_uuid: string }) => v.schedule_uuid), [visits.soon, visits.unlinked]);
    assert.deepEqual(c.recent_visits.map((v: { schedule_uuid: string }) => v.schedule_uuid), [visits.past, visits.older]);
    assert.deepEqual(c.last_note, { schedule_uuid: visits.past, visit_date: dayFromToday(-10), assessment: 'A latest', plan: 'P latest' });
    assert.deepEqual(c.latest_vital_signs, { heart_rate: 70 });
    assert.equal(c.documents.length, 1);
    assert.equal(c.documents[0].schedule_uuid, visits.older);
    assert.equal(c.documents[0].signed, true);

    const fresh = await createPatient(server, me.token, { first_name: 'No', last_name: 'Visits' });
    const empty = (await server.api('GET', `/patient/chart-details/${fresh.referral_uuid}`, { token: me.token })).body.data;
    assert.deepEqual([empty.upcoming_visits, empty.recent_visits, empty.documents, empty.last_note, empty.latest_vital_signs], [[], [], [], null, null]);
    assert.equal(empty.referral.visits_ordered, null);

    for (const id of [randomUUID(), 'nope', p.uuid]) {
      const miss = await server.api('GET', `/patient/chart-details/${id}`, { token: me.token });
      assert.equal(miss.status, 404, id);
      assert.equal(miss.body.code, 'referral_not_found');
    }
  });

  test('scheduled visits by referral: every status by date, month and year filters, address decrypted; 404; 422', async () => {
    const { me, p, visits } = await clinicianWithChart();
    const call = (body: unknown, id = p.referral_uuid) => server.api('POST', `/patient/get-scheduled-visits/${id}`, { token: me.token, body });
    const all = await call({});
    assert.equal(all.status, 200, JSON.stringify(all.body));
    assert.deepEqual(all.body.data.map((v: { schedule_uuid: string }) => v.schedule_uuid), [visits.older, visits.past, visits.soon, visits.unlinked]);
    const soon = all.body.data.find((v: { schedule_uuid: string }) => v.schedule_uuid === visits.soon);
    assert.deepEqual(soon, { schedule_uuid: visits.soon, visit_date: dayFromToday(5), start_time: '10:30', status: 'scheduled', visit_type: 'routine', duration_minutes: 45, address: '2 Oak Ave', has_note: false });
    assert.equal(all.body.data[0].has_note, true);

    const [year, month] = dayFromToday(5).split('-');
    const inMonth = (await call({ filter_month: month, filter_year: year })).body.data;
    assert.ok(inMonth.length >= 1 && inMonth.every((v: { visit_date: string }) => v.visit_date.startsWith(`${year}-${month}`)));
    assert.deepEqual((await call({ filter_year: '1999' })).body.data, []);
    assert.equal((await server.api('POST', `/patient/get-scheduled-visits/${p.referral_uuid}`, { token: me.token })).status, 200, 'body is optional');
    assert.equal((await call({ filter_month: '13' })).status, 422);
    assert.equal((await call({ filter_year: '26' })).status, 422);
    const miss = await call({}, randomUUID());
    assert.equal(miss.status, 404);
    assert.equal(miss.body.code, 'referral_not_found');
  });

  test('general summary: counts in the range; dateRange values documented, others 422', async () => {
    const { me } = await clinicianWithChart();
    const res = await server.api('GET', '/patient/general-summary?dateRange=last_30_days', { token: me.token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const s = res.body.data;
    assert.equal(s.date_range, 'last_30_days');
    assert.equal(s.time_zone, 'America/New_York');
    assert.deepEqual(s.patients, { total: 1, new: 1, seen: 1, open_referrals: 1 });
    assert.deepEqual(s.visits, { total: 2, scheduled: 0, in_progress: 0, completed: 2, cancelled: 0, missed: 0 });
    assert.deepEqual(s.notes, { submitted: 2, signed: 1, unsigned: 1 });
    const def = (await server.api('GET', '/patient/general-summary', { token: me.token })).body.data;
    assert.equal(def.date_range, 'last_30_days');
    const year = (await server.api('GET', '/patient/general-summary?dateRange=this_year', { token: me.token })).body.data;
    assert.equal(year.from.slice(5), '01-01');
    assert.equal(year.to.slice(5), '12-31');
    for (const r of ['today', 'this_week', 'last_7_days', 'this_month', 'last_90_days']) {
      const one = await server.api('GET', `/patient/general-summary?dateRange=${r}`, { token: me.token });
      assert.equal(one.status, 200, r);
      assert.ok(one.body.data.from <= one.body.data.to);
    }
    assert.equal((await server.api('GET', '/patient/general-summary?dateRange=forever', { token: me.token })).status, 422);
  });

  test('document list: signed notes only, as Document records', async () => {
    const { me, p, visits } = await clinicianWithChart();
    const res = await server.api('GET', '/document/list', { token: me.token });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.length, 1);
    const [d] = res.body.data;
    assert.equal(d.kind, 'visit_note');
    assert.equal(d.schedule_uuid, visits.older);
    assert.equal(d.patient_uuid, p.uuid);
    assert.equal(d.referral_uuid, p.referral_uuid);
    assert.equal(d.signed, true);
    assert.match(d.title, /visit note/);
  });

  test('tenant isolation: every uuid endpoint answers another clinician 404 exactly like a random uuid; lists show nothing', async () => {
    const { p } = await clinicianWithChart();
    const intruder = await registerUser(server);
    const t = intruder.token;
    const calls: Array<[string, (id: string) => Promise<{ status: number; body: unknown }>, string]> = [
      ['chart-details', (id) => server.api('GET', `/patient/chart-details/${id}`, { token: t }), p.referral_uuid],
      ['get-scheduled-visits', (id) => server.api('POST', `/patient/get-scheduled-visits/${id}`, { token: t, body: {} }), p.referral_uuid],
      ['update', (id) => server.api('PUT', `/patient/update/${id}`, { token: t, body: { first_name: 'Stolen' } }), p.uuid],
    ];
    for (const [name, call, id] of calls) {
      const foreign = await call(id);
      const random = await call(randomUUID());
      assert.equal(foreign.status, 404, name);
      assert.deepEqual(foreign.body, random.body, name);
    }
    assert.deepEqual((await server.api('GET', '/patient/my-patients?search_by_name=chart', { token: t })).body.data, []);
    assert.deepEqual((await server.api('GET', '/document/list', { token: t })).body.data, []);
    const s = (await server.api('GET', '/patient/general-summary?dateRange=this_year', { token: t })).body.data;
    assert.deepEqual([s.patients.total, s.visits.total, s.notes.submitted], [0, 0, 0]);
  });
});
