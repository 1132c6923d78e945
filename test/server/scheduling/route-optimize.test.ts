/**
 * Route optimisation on the embedded defaults (no routing engine, no geocoder configured):
 * the scheduling policy, POST /scheduling/optimize over ZIP centroids and learned GPS fixes,
 * POST /scheduling/apply all-or-nothing, every listed error, and tenant isolation.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { schedulingPolicies } from '@fieldchart/schema/db';
import { greatCircleLeg } from '@fieldchart/schema/routing';
import { forEachBackend } from '../../helpers/backends.ts';
import { startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { assertTimesChain, COLUMBUS, minutesOf, schedule, startTimes, utcClinician } from './route-fixtures.ts';

forEachBackend('scheduling: policy, optimize, apply', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('policy: defaults, a full PUT, partial PUTs, 422s, 401; the home address is encrypted at rest', async () => {
    const u = await utcClinician(server);
    const get = async () => (await server.api('GET', '/scheduling/policy', { token: u.token })).body.data;
    assert.deepEqual(await get(), { home_base_address: null, home_base_lat: null, home_base_lng: null, default_visit_minutes: 45, buffer_minutes: 10, day_start: '08:00' });
    const full = { home_base_address: '275 E Broad St, Columbus, OH 43215', home_base_lat: 39.9634, home_base_lng: -82.9911, default_visit_minutes: 50, buffer_minutes: 15, day_start: '07:30' };
    const put = await server.api('PUT', '/scheduling/policy', { token: u.token, body: full });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.deepEqual(put.body.data, full);
    assert.deepEqual(await get(), full);
    // default_visit_minutes is what a visit naming neither duration nor type takes.
    const plain = await schedule(server, u, { visit_date: '2026-12-20', start_time: '09:00', address: COLUMBUS[0] });
    const typed = await schedule(server, u, { visit_date: '2026-12-20', start_time: '10:00', address: COLUMBUS[0], visit_type: 'evaluation' });
    const durationOf = async (id: string) => (await server.api('GET', `/visit-details/${id}`, { token: u.token })).body.data.duration_minutes;
    assert.deepEqual([await durationOf(plain), await durationOf(typed)], [50, 75]);
    assert.equal((await server.api('PUT', '/scheduling/policy', { token: u.token, body: { buffer_minutes: 5 } })).status, 200);
    assert.deepEqual(await get(), { ...full, buffer_minutes: 5 });
    // A new address without coordinates drops the old address's coordinates.
    await server.api('PUT', '/scheduling/policy', { token: u.token, body: { home_base_address: '1 Capitol Square, Columbus, OH 43215' } });
    assert.deepEqual(await get(), { ...full, buffer_minutes: 5, home_base_address: '1 Capitol Square, Columbus, OH 43215', home_base_lat: null, home_base_lng: null });
    const [row] = await server.db.database.db.select().from(schedulingPolicies).where(eq(schedulingPolicies.userId, u.uuid));
    assert.ok(row?.homeBaseAddressEnc && !row.homeBaseAddressEnc.includes('Capitol'), 'sealed, not plain');
    for (const [body, field] of [
      [{ home_base_lat: 40 }, 'home_base_lat'],
      [{ home_base_lat: 91, home_base_lng: 0 }, 'home_base_lat'],
      [{ day_start: '25:00' }, 'day_start'],
      [{ buffer_minutes: -1 }, 'buffer_minutes'],
      [{ default_visit_minutes: 2.5 }, 'default_visit_minutes'],
      [{ surprise: 1 }, ''],
    ] as const) {
      const res = await server.api('PUT', '/scheduling/policy', { token: u.token, body });
      assert.equal(res.status, 422, JSON.stringify(body));
      assert.equal(res.body.status, false);
      if (field) assert.ok(res.body.errors?.[field], JSON.stringify(res.body));
    }
    assert.equal((await get()).buffer_minutes, 5, 'a refused PUT changed nothing');
    assert.equal((await server.api('GET', '/scheduling/policy')).status, 401);
    assert.equal((await server.api('PUT', '/scheduling/policy', { body: { buffer_minutes: 1 } })).status, 401);
  });

  test('optimize: the optimum from ZIP centroids, times chained from day_start, savings ≥ 0, and nothing rescheduled', async () => {
    const u = await utcClinician(server);
    const date = '2026-12-01';
    // A zig-zag across town: north, south, north, east, south-west.
    const plan = [
      [COLUMBUS[5], '09:00', 45],
      [COLUMBUS[2], '10:00', 60],
      [COLUMBUS[4], '11:30', 30],
      [COLUMBUS[3], '13:00', 45],
      [COLUMBUS[0], '14:30', 75],
    ] as const;
    const ids: string[] = [];
    const durations: Record<string, number> = {};
    for (const [address, start_time, duration_minutes] of plan) {
      const id = await schedule(server, u, { visit_date: date, start_time, address, duration_minutes });
      ids.push(id);
      durations[id] = duration_minutes;
    }
    // Cancelled and other-day visits do not count.
    const cancelledDay = await schedule(server, u, { visit_date: '2026-12-02', start_time: '09:00', address: COLUMBUS[1] });
    const before = await startTimes(server, u, ids);
    const res = await server.api('POST', '/scheduling/optimize', { token: u.token, body: { date } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const d = res.body.data;
    assert.equal(d.routing_source, 'great_circle');
    assert.deepEqual(d.unrouted, []);
    assert.deepEqual([...d.visits.map((v: { schedule_uuid: string }) => v.schedule_uuid)].sort(), [...ids].sort());
    assert.ok(!d.visits.some((v: { schedule_uuid: string }) => v.schedule_uuid === cancelledDay));
    assert.deepEqual([d.visits[0].suggested_start_time, d.visits[0].drive_minutes, d.visits[0].drive_miles], ['08:00', 0, 0], 'no home base: the day starts at the first visit');
    assertTimesChain(d.visits, durations, d.visits.map((v: { schedule_uuid: string }) => v.schedule_uuid), 10);
    const legSum = d.visits.reduce((s: number, v: { drive_minutes: number }) => s + v.drive_minutes, 0);
    assert.ok(Math.abs(legSum - d.total_drive_minutes) < 0.3, 'no home base: the total is the legs');
    assert.ok(d.savings.minutes > 0, `the zig-zag is improved: ${JSON.stringify(d.savings)}`);
    assert.ok(d.total_miles > 0 && d.total_drive_minutes > 0);
    assert.deepEqual(await startTimes(server, u, ids), before, 'optimize changes nothing');
    // The same day again: the same answer (deterministic).
    const again = await server.api('POST', '/scheduling/optimize', { token: u.token, body: { date } });
    assert.deepEqual(again.body.data, d);
  });

  test('optimize: the home base starts and ends the day; lock_first keeps the first visit and its time', async () => {
    const u = await utcClinician(server);
    const date = '2026-12-03';
    const home = { lat: 40.0992, lng: -83.0171 }; // north of the city (Worthington)
    await server.api('PUT', '/scheduling/policy', { token: u.token, body: { home_base_lat: home.lat, home_base_lng: home.lng, day_start: '07:30', buffer_minutes: 15 } });
    const ids = [];
    for (const [i, address] of [COLUMBUS[2], COLUMBUS[5], COLUMBUS[0], COLUMBUS[3]].entries()) {
      ids.push(await schedule(server, u, { visit_date: date, start_time: `${String(9 + i * 2).padStart(2, '0')}:15`, address, duration_minutes: 40 }));
    }
    const res = await server.api('POST', '/scheduling/optimize', { token: u.token, body: { date } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const d = res.body.data;
    // The visit nearest home (4100 N High St, 43214) is first or last of a loop from home.
    const north = ids[1];
    assert.ok(d.visits[0].schedule_uuid === north || d.visits[3].schedule_uuid === north, JSON.stringify(d.visits));
    assert.ok(d.visits[0].drive_minutes > 0, 'the first leg comes from the home base');
    assert.equal(minutesOf(d.visits[0].suggested_start_time), minutesOf('07:30') + Math.ceil(d.visits[0].drive_minutes - 0.05));
    const legSum = d.visits.reduce((s: number, v: { drive_minutes: number }) => s + v.drive_minutes, 0);
    assert.ok(d.total_drive_minutes > legSum + 1, 'the total includes the drive back home');
    assertTimesChain(d.visits, Object.fromEntries(ids.map((id) => [id, 40])), d.visits.map((v: { schedule_uuid: string }) => v.schedule_uuid), 15);

    const locked = await server.api('POST', '/scheduling/optimize', { token: u.token, body: { date, lock_first: true } });
    assert.equal(locked.status, 200, JSON.stringify(locked.body));
    const l = locked.body.data;
    assert.deepEqual([l.visits[0].schedule_uuid, l.visits[0].suggested_start_time], [ids[0], '09:15'], 'the current first visit stays, at its time');
    assert.ok(l.total_drive_minutes >= d.total_drive_minutes - 0.1, 'a constraint cannot beat the free optimum');
    assert.ok(l.savings.minutes >= 0);
  });

  test('optimize: the patient location learned from accurate arrive fixes beats the ZIP centroid; inaccurate fixes are ignored', async () => {
    const u = await utcClinician(server);
    const mk = async (address: string) => {
      const res = await server.api('POST', '/patient/create', { token: u.token, body: { first_name: 'Ada', last_name: 'Lovelace', address } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.data.uuid as string;
    };
    // Three patients in one ZIP: by centroid alone they are all at one point.
    const a = await mk('10 N High St, Columbus, OH 43215');
    const b = await mk('20 S Third St, Columbus, OH 43215');
    const c = await mk('30 E Town St, Columbus, OH 43215');
    const fixA = { lat: 40.02, lng: -83.05 };
    const arrive = async (patient: string, date: string, fix: { lat: number; lng: number }, accuracy: number) => {
      const id = await schedule(server, u, { patient_uuid: patient, visit_date: date, start_time: '09:00' });
      const ev = (event_type: string, t: string) => ({ event_type, event_time: `${date}T${t}:00Z`, latitude: fix.lat, longitude: fix.lng, accuracy });
      const res = await server.api('POST', '/visit-timer-events', { token: u.token, body: { schedule_uuid: id, events: [ev('start_travel', '08:40'), ev('arrive', '09:00')] } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    };
    await arrive(a, '2026-11-20', fixA, 12);
    await arrive(a, '2026-11-24', { lat: fixA.lat + 0.0002, lng: fixA.lng }, 30);
    await arrive(a, '2026-11-25', { lat: 41.5, lng: -81.7 }, 400); // far away, inaccurate: ignored
    await arrive(b, '2026-11-21', { lat: 39.8, lng: -82.8 }, 500); // inaccurate: B stays at the centroid
    const date = '2026-12-04';
    for (const [i, p] of [a, b, c].entries()) await schedule(server, u, { patient_uuid: p, visit_date: date, start_time: `1${i}:00` });
    const res = await server.api('POST', '/scheduling/optimize', { token: u.token, body: { date } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    // The best open route goes to or from A once: one leg A↔centroid; B↔C costs nothing.
    const centroid43215 = { lat: 39.9671, lng: -83.0044 };
    const median = { lat: fixA.lat + 0.0001, lng: fixA.lng };
    const expected = greatCircleLeg(median, centroid43215).miles;
    assert.ok(Math.abs(res.body.data.total_miles - expected) < 0.02, `${res.body.data.total_miles} vs ${expected}`);
  });

  test('optimize: 422 for fewer than 3 geocodable visits and for more than 12; visits with no location are listed as unrouted', async () => {
    const u = await utcClinician(server);
    const tooFew = '2026-12-05';
    await schedule(server, u, { visit_date: tooFew, start_time: '09:00', address: COLUMBUS[0] });
    await schedule(server, u, { visit_date: tooFew, start_time: '10:00', address: COLUMBUS[1] });
    await schedule(server, u, { visit_date: tooFew, start_time: '11:00', address: 'The blue house past the church' });
    const few = await server.api('POST', '/scheduling/optimize', { token: u.token, body: { date: tooFew } });
    assert.equal(few.status, 422, JSON.stringify(few.body));
    assert.equal(few.body.code, 'too_few_geocodable_visits');
    assert.ok(few.body.errors?.date);
    assert.ok(!JSON.stringify(few.body).includes('church'), 'no address in an error body');
    const unplaced = await schedule(server, u, { visit_date: '2026-12-06', start_time: '08:00', address: 'The blue house past the church' });
    for (const [i, address] of COLUMBUS.slice(0, 3).entries()) await schedule(server, u, { visit_date: '2026-12-06', start_time: `1${i}:00`, address });
    const partial = await server.api('POST', '/scheduling/optimize', { token: u.token, body: { date: '2026-12-06' } });
    assert.equal(partial.status, 200, JSON.stringify(partial.body));
    assert.deepEqual(partial.body.data.unrouted, [unplaced]);
    assert.equal(partial.body.data.visits.length, 3);

    const busy = '2026-12-07';
    for (let i = 0; i < 13; i++) await schedule(server, u, { visit_date: busy, start_time: `${String(7 + i).padStart(2, '0')}:00`, address: COLUMBUS[i % COLUMBUS.length], duration_minutes: 30 });
    const many = await server.api('POST', '/scheduling/optimize', { token: u.token, body: { date: busy } });
    assert.equal(many.status, 422, JSON.stringify(many.body));
    assert.equal(many.body.code, 'too_many_visits');
    for (const body of [{}, { date: '2026-02-30' }, { date: busy, lock_first: 'yes' }]) {
      const res = await server.api('POST', '/scheduling/optimize', { token: u.token, body });
      assert.equal(res.status, 422, JSON.stringify(body));
    }
    assert.equal((await server.api('POST', '/scheduling/optimize', { body: { date: busy } })).status, 401);
    // Another clinician sees none of these visits.
    const other = await utcClinician(server);
    const isolated = await server.api('POST', '/scheduling/optimize', { token: other.token, body: { date: busy } });
    assert.equal(isolated.status, 422);
    assert.equal(isolated.body.code, 'too_few_geocodable_visits');
  });

  test('apply: reschedules the day; one bad visit (unknown, foreign, invalid time, wrong day) changes nothing', async () => {
    const u = await utcClinician(server);
    const other = await utcClinician(server);
    const date = '2026-12-08';
    const ids = [];
    for (const [i, address] of COLUMBUS.slice(0, 3).entries()) ids.push(await schedule(server, u, { visit_date: date, start_time: `1${i}:00`, address }));
    const foreign = await schedule(server, other, { visit_date: date, start_time: '09:00', address: COLUMBUS[0] });
    const otherDay = await schedule(server, u, { visit_date: '2026-12-09', start_time: '09:00', address: COLUMBUS[0] });
    const before = await startTimes(server, u, ids);
    const apply = (token: string, visits: Array<{ schedule_uuid: string; start_time: string }>) => server.api('POST', '/scheduling/apply', { token, body: { date, visits } });

    const cases: Array<[Array<{ schedule_uuid: string; start_time: string }>, number, string]> = [
      [[{ schedule_uuid: ids[0]!, start_time: '08:00' }, { schedule_uuid: crypto.randomUUID(), start_time: '09:00' }], 404, 'visit_not_found'],
      [[{ schedule_uuid: ids[0]!, start_time: '08:00' }, { schedule_uuid: 'not-a-uuid', start_time: '09:00' }], 404, 'visit_not_found'],
      [[{ schedule_uuid: ids[0]!, start_time: '08:00' }, { schedule_uuid: foreign, start_time: '09:00' }], 404, 'visit_not_found'],
      [[{ schedule_uuid: ids[0]!, start_time: '08:00' }, { schedule_uuid: ids[1]!, start_time: '25:61' }], 422, 'invalid_reschedule'],
      [[{ schedule_uuid: ids[0]!, start_time: '08:00' }, { schedule_uuid: otherDay, start_time: '09:00' }], 422, 'invalid_reschedule'],
      [[{ schedule_uuid: ids[0]!, start_time: '08:00' }, { schedule_uuid: ids[0]!, start_time: '09:00' }], 422, 'invalid_reschedule'],
    ];
    for (const [visits, status, code] of cases) {
      const res = await apply(u.token, visits);
      assert.equal(res.status, status, JSON.stringify(res.body));
      assert.equal(res.body.code, code);
      if (status === 422) {
        assert.ok(res.body.message.includes(visits[1]!.schedule_uuid), `names the visit: ${res.body.message}`);
        assert.ok(Object.keys(res.body.errors).some((k) => k.startsWith('visits.1.')), JSON.stringify(res.body.errors));
      }
      assert.deepEqual(await startTimes(server, u, ids), before, `nothing changed after ${code}`);
    }
    assert.equal((await startTimes(server, other, [foreign]))[foreign], '09:00', 'the foreign visit is untouched');
    assert.equal((await apply(other.token, [{ schedule_uuid: ids[0]!, start_time: '08:00' }])).status, 404, 'tenant isolation');
    assert.equal((await server.api('POST', '/scheduling/apply', { body: { date, visits: [] } })).status, 401);
    assert.equal((await server.api('POST', '/scheduling/apply', { token: u.token, body: { date, visits: [] } })).status, 422);

    // The optimizer's suggestion, applied: every time lands, together.
    const suggestion = await server.api('POST', '/scheduling/optimize', { token: u.token, body: { date } });
    assert.equal(suggestion.status, 200, JSON.stringify(suggestion.body));
    const planned = suggestion.body.data.visits.map((v: { schedule_uuid: string; suggested_start_time: string }) => ({ schedule_uuid: v.schedule_uuid, start_time: v.suggested_start_time }));
    const ok = await apply(u.token, planned);
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.status, true);
    const after = await startTimes(server, u, ids);
    for (const p of planned) assert.equal(after[p.schedule_uuid], p.start_time);
    const list = await server.api('GET', `/get-upcomming-visits?filter_date=${date}`, { token: u.token });
    assert.deepEqual(
      list.body.data.today_visit.map((v: { uuid: string }) => v.uuid),
      planned.map((p: { schedule_uuid: string }) => p.schedule_uuid),
      'the day now lists in the suggested order',
    );
  });

  test('the demo data (fieldchart seed --demo, Columbus OH) optimises: every visit of today is placed (learned fixes or ZIP centroids)', async () => {
    const services = server.runtime.services;
    const seeded = await services.demoSeed.run(services);
    assert.ok(seeded.visits.today >= 3, JSON.stringify(seeded.visits));
    const signIn = await server.api('POST', '/sign-in', { body: { email: seeded.email, password: seeded.password } });
    assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
    const res = await server.api('POST', '/scheduling/optimize', { token: signIn.body.data.token, body: { date: seeded.today } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.visits.length + res.body.data.unrouted.length, seeded.visits.today);
    assert.deepEqual(res.body.data.unrouted, []);
    assert.ok(res.body.data.total_miles > 0 && res.body.data.total_miles < 60, `a day within Columbus: ${res.body.data.total_miles} mi`);
  });
});
