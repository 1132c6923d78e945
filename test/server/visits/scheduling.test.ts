/**
 * Scheduling and reading visits: validation, the caller's own patients only, defaults from
 * the patient, today/upcoming in the clinician's time zone on the manual clock, history with
 * pagination, Idempotency-Key, push tokens, 401.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { createPatient, details, scheduleVisit } from './visit-fixtures.ts';

forEachBackend('visits: scheduling and lists', (backend) => {
  let server: TestServer;
  // 05:50Z on Nov 21 is still 23:50 on Nov 20 in Chicago (UTC−6), and 06:50 on Nov 21 in Berlin.
  const START = new Date('2026-11-21T05:50:00Z');
  const clock = manualClock(START);
  before(async () => {
    server = await startTestServer(backend, { clock });
  });
  after(() => server.close());

  test('schedule: defaults from the patient and type, linked to the open referral; details show it', async () => {
    const u = await registerUser(server);
    const patient = await createPatient(server, u);
    const uuid = await scheduleVisit(server, u, { patient_uuid: patient.uuid, visit_date: '2026-11-23', start_time: '09:30', visit_type: 'evaluation', notes: 'Gate code 1234' });
    const v = await details(server, u, uuid);
    assert.deepEqual(
      { uuid: v.uuid, schedule_uuid: v.schedule_uuid, patient: v.patient_uuid, referral: v.referral_uuid, name: v.patient?.first_name, address: v.address, notes: v.notes, duration: v.duration_minutes, status: v.status, events: v.timer_events, mileage: v.mileage, soap: v.soap_note },
      { uuid, schedule_uuid: uuid, patient: patient.uuid, referral: patient.referral_uuid, name: 'Marguerite', address: '1200 W Fullerton Ave, Chicago, IL 60614', notes: 'Gate code 1234', duration: 75, status: 'scheduled', events: [], mileage: null, soap: null },
    );
    const own = await details(server, u, await scheduleVisit(server, u, { visit_date: '2026-11-23', start_time: '13:00', address: '5 Elm St' }));
    assert.deepEqual([own.patient, own.address, own.duration_minutes, own.visit_type], [null, '5 Elm St', 45, 'routine']);
  });

  test('schedule: 422 for missing fields, impossible dates and times, and unknown or foreign patients', async () => {
    const u = await registerUser(server);
    const other = await registerUser(server);
    const foreign = await createPatient(server, other);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ start_time: '09:00' }, 'visit_date'],
      [{ visit_date: '2026-11-23' }, 'start_time'],
      [{ visit_date: '2026-02-30', start_time: '09:00' }, 'visit_date'],
      [{ visit_date: '2026-13-01', start_time: '09:00' }, 'visit_date'],
      [{ visit_date: '2026-11-23', start_time: '24:00' }, 'start_time'],
      [{ visit_date: '2026-11-23', start_time: '9:5' }, 'start_time'],
      [{ visit_date: '2026-11-23', start_time: '09:00', patient_uuid: foreign.uuid }, 'patient_uuid'],
      [{ visit_date: '2026-11-23', start_time: '09:00', patient_uuid: crypto.randomUUID() }, 'patient_uuid'],
      [{ visit_date: '2026-11-23', start_time: '09:00', patient_uuid: 'nope' }, 'patient_uuid'],
    ];
    for (const [body, field] of cases) {
      const res = await server.api('POST', '/schedule-visit-request-save', { token: u.token, body });
      assert.equal(res.status, 422, JSON.stringify(body));
      assert.ok(res.body.errors?.[field], `${JSON.stringify(body)} → ${JSON.stringify(res.body)}`);
    }
    const foreignRes = await server.api('POST', '/schedule-visit-request-save', { token: u.token, body: cases[6]?.[0] });
    const randomRes = await server.api('POST', '/schedule-visit-request-save', { token: u.token, body: cases[7]?.[0] });
    assert.deepEqual(foreignRes.body, randomRes.body, 'a foreign patient reads exactly like an unknown one');
  });

  test("schedule: 422 for a wall time skipped by a daylight-saving change in the clinician's zone", async () => {
    const u = await registerUser(server); // default zone America/New_York: 02:00–02:59 on 2026-03-08 never happens
    const gap = await server.api('POST', '/schedule-visit-request-save', { token: u.token, body: { visit_date: '2026-03-08', start_time: '02:30' } });
    assert.equal(gap.status, 422, JSON.stringify(gap.body));
    assert.deepEqual(gap.body.errors, { start_time: ['does not exist in America/New_York on that date (daylight-saving change)'] });
    for (const start_time of ['01:59', '03:00']) {
      const ok = await server.api('POST', '/schedule-visit-request-save', { token: u.token, body: { visit_date: '2026-03-08', start_time } });
      assert.equal(ok.status, 200, `${start_time}: ${JSON.stringify(ok.body)}`);
    }
    // The fall-back hour happens (twice) and is accepted; Europe's gap is a different date.
    assert.equal((await server.api('POST', '/schedule-visit-request-save', { token: u.token, body: { visit_date: '2026-11-01', start_time: '01:30' } })).status, 200);
    assert.equal((await server.api('POST', '/schedule-visit-request-save', { token: u.token, body: { visit_date: '2026-03-29', start_time: '02:30' } })).status, 200);
    await server.api('PUT', '/my-settings', { token: u.token, body: { time_zone: 'Europe/Berlin' } });
    const berlin = await server.api('POST', '/schedule-visit-request-save', { token: u.token, body: { visit_date: '2026-03-29', start_time: '02:30' } });
    assert.equal(berlin.status, 422);
    assert.deepEqual(berlin.body.errors, { start_time: ['does not exist in Europe/Berlin on that date (daylight-saving change)'] });
  });

  test('Idempotency-Key: a replayed schedule creates nothing new', async () => {
    const u = await registerUser(server);
    const body = { visit_date: '2026-11-25', start_time: '10:00', address: '1 Main St' };
    const headers = { 'idempotency-key': `sched-${crypto.randomUUID()}` };
    const first = await server.api('POST', '/schedule-visit-request-save', { token: u.token, body, headers });
    const again = await server.api('POST', '/schedule-visit-request-save', { token: u.token, body, headers });
    assert.equal(again.status, 200);
    assert.equal(again.body.data.uuid, first.body.data.uuid);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    const list = await server.api('GET', '/get-upcomming-visits', { token: u.token });
    assert.equal(list.body.data.upcomming_visit.length, 1);
  });

  test("today and upcoming follow the clinician's time zone across the date line; filters bound upcoming", async () => {
    const chicago = await registerUser(server);
    await server.api('PUT', '/my-settings', { token: chicago.token, body: { time_zone: 'America/Chicago' } });
    const berlin = await registerUser(server);
    await server.api('PUT', '/my-settings', { token: berlin.token, body: { time_zone: 'Europe/Berlin' } });
    for (const u of [chicago, berlin]) {
      for (const [visit_date, start_time] of [['2026-11-20', '15:00'], ['2026-11-21', '08:00'], ['2026-11-26', '09:00'], ['2026-12-10', '09:00']]) {
        await scheduleVisit(server, u, { visit_date, start_time, address: 'somewhere' });
      }
    }
    const dates = (list: Array<{ visit_date: string }>) => list.map((v) => v.visit_date);
    const c = (await server.api('GET', '/get-upcomming-visits', { token: chicago.token })).body.data;
    assert.equal(c.today, '2026-11-20');
    assert.deepEqual(dates(c.today_visit), ['2026-11-20']);
    assert.deepEqual(dates(c.upcomming_visit), ['2026-11-21', '2026-11-26', '2026-12-10']);
    const b = (await server.api('GET', '/get-upcomming-visits', { token: berlin.token })).body.data;
    assert.equal(b.today, '2026-11-21');
    assert.deepEqual(dates(b.today_visit), ['2026-11-21']);
    assert.deepEqual(dates(b.upcomming_visit), ['2026-11-26', '2026-12-10']);

    const week = (await server.api('GET', '/get-upcomming-visits?filter=week', { token: chicago.token })).body.data;
    assert.deepEqual(dates(week.upcomming_visit), ['2026-11-21', '2026-11-26']);
    const todayOnly = (await server.api('GET', '/get-upcomming-visits?filter=today', { token: chicago.token })).body.data;
    assert.deepEqual(dates(todayOnly.upcomming_visit), []);
    const moved = (await server.api('GET', '/get-upcomming-visits?filter=month&filter_date=2026-11-26&per_page=1', { token: chicago.token })).body.data;
    assert.deepEqual([dates(moved.today_visit), dates(moved.upcomming_visit)], [['2026-11-26'], ['2026-12-10']]);
    for (const q of ['filter=year', 'filter_date=2026-02-30', 'per_page=0']) {
      assert.equal((await server.api('GET', `/get-upcomming-visits?${q}`, { token: chicago.token })).status, 422, q);
    }

    // Twenty minutes later it is Nov 21 in Chicago too.
    clock.set(new Date('2026-11-21T06:10:00Z'));
    try {
      const later = (await server.api('GET', '/get-upcomming-visits', { token: chicago.token })).body.data;
      assert.deepEqual(dates(later.today_visit), ['2026-11-21']);
      const history = (await server.api('GET', '/get-visit-history', { token: chicago.token })).body;
      assert.deepEqual(dates(history.data), ['2026-11-20']);
    } finally {
      clock.set(START);
    }
  });

  test('history: past visits newest first, paginated with meta; with_notes keeps documented ones', async () => {
    const u = await registerUser(server, {});
    await server.api('PUT', '/my-settings', { token: u.token, body: { time_zone: 'America/Chicago' } });
    for (const d of ['2026-11-10', '2026-11-12', '2026-11-14', '2026-11-30']) await scheduleVisit(server, u, { visit_date: d, start_time: '09:00' });
    const documented = await scheduleVisit(server, u, { visit_date: '2026-11-13', start_time: '09:00' });
    const soap = await server.api('POST', '/patient-referral-end-visit-note', {
      token: u.token,
      body: { schedule_uuid: documented, subjective: 's', objective: 'o', assessment: 'a', plan: 'p' },
    });
    assert.equal(soap.status, 200, JSON.stringify(soap.body));
    const page1 = (await server.api('GET', '/get-visit-history?per_page=2', { token: u.token })).body;
    assert.deepEqual(page1.data.map((v: { visit_date: string }) => v.visit_date), ['2026-11-14', '2026-11-13']);
    assert.deepEqual(page1.meta, { current_page: 1, per_page: 2, total: 4, last_page: 2 });
    const page2 = (await server.api('GET', '/get-visit-history?per_page=2&page=2', { token: u.token })).body;
    assert.deepEqual(page2.data.map((v: { visit_date: string }) => v.visit_date), ['2026-11-12', '2026-11-10']);
    const notes = (await server.api('GET', '/get-visit-history?record_type=with_notes', { token: u.token })).body;
    assert.deepEqual(notes.data.map((v: { uuid: string; has_note: boolean }) => [v.uuid, v.has_note]), [[documented, true]]);
    assert.equal(notes.data[0].soap_note, null, 'lists leave the note to the details');
    assert.equal((await server.api('GET', '/get-visit-history?record_type=drafts', { token: u.token })).status, 422);
  });

  test('details: 404 for unknown, malformed and foreign visits, the same body each time', async () => {
    const u = await registerUser(server);
    const other = await registerUser(server);
    const theirs = await scheduleVisit(server, other, { visit_date: '2026-11-23', start_time: '09:00' });
    const bodies = [];
    for (const id of [theirs, crypto.randomUUID(), 'not-a-uuid']) {
      const res = await server.api('GET', `/visit-details/${id}`, { token: u.token });
      assert.equal(res.status, 404, id);
      bodies.push(res.body);
    }
    assert.deepEqual(bodies[0], bodies[1]);
    assert.deepEqual(bodies[0], bodies[2]);
  });

  test('push tokens: 422 for invalid tokens; a token moves to the latest user who registers it', async () => {
    const a = await registerUser(server);
    const b = await registerUser(server);
    const token = `fcm:${'APA91b'.repeat(30)}_x-y`;
    for (const fcm_token of ['short', `${token} with space`, 'x'.repeat(4097), undefined]) {
      const res = await server.api('POST', '/register-fcm-token', { token: a.token, body: { fcm_token } });
      assert.equal(res.status, 422, String(fcm_token).slice(0, 20));
      assert.ok(res.body.errors.fcm_token);
    }
    assert.equal((await server.api('POST', '/register-fcm-token', { token: a.token, body: { fcm_token: token } })).status, 200);
    assert.equal((await server.api('POST', '/register-fcm-token', { token: a.token, body: { fcm_token: token } })).status, 200);
    assert.equal((await server.api('POST', '/register-fcm-token', { token: b.token, body: { fcm_token: token } })).status, 200);
    const { db } = server.runtime.database;
    const { pushTokens } = await import('@fieldchart/schema/db');
    const { eq } = await import('drizzle-orm');
    const rows = await db.select().from(pushTokens).where(eq(pushTokens.token, token));
    assert.deepEqual(rows.map((r) => r.userId), [b.uuid]);
  });

  test('401 without or with a bad token on every visit endpoint', async () => {
    const id = crypto.randomUUID();
    const calls: Array<[string, string]> = [
      ['POST', '/schedule-visit-request-save'],
      ['GET', '/get-upcomming-visits'],
      ['GET', '/get-visit-history'],
      ['GET', `/visit-details/${id}`],
      ['POST', '/visit-timer-events'],
      ['POST', '/patient-referral-end-visit-note'],
      ['PUT', `/visit/${id}/mileage`],
      ['POST', '/register-fcm-token'],
    ];
    for (const [method, path] of calls) {
      for (const token of [null, 'not.a.jwt']) {
        const res = await server.api(method, path, { token, ...(method === 'GET' ? {} : { body: {} }) });
        assert.equal(res.status, 401, `${method} ${path} ${token}`);
      }
    }
  });

  test('the OpenAPI document carries the visit records and routes', async () => {
    const doc = (await server.api('GET', '/openapi.json')).body;
    for (const id of ['Visit', 'TimerEvent', 'EvvRecord', 'Mileage', 'SoapNote', 'VitalSigns']) assert.ok(doc.components.schemas[id], id);
    for (const path of ['/schedule-visit-request-save', '/get-upcomming-visits', '/get-visit-history', '/visit-details/{scheduleUuid}', '/visit-timer-events', '/patient-referral-end-visit-note', '/visit/{uuid}/mileage', '/register-fcm-token']) {
      assert.ok(doc.paths[`/api/therapist/v1${path}`], path);
    }
  });
});
