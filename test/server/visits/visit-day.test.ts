/**
 * A visit from drive to signed note: timer events and the EVV record derived from them, the
 * SOAP submission that completes the visit (vital flags, signature checks, 409 on a second
 * note, Idempotency-Key), mileage last-writer-wins, and tenant isolation on every uuid route.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { forEachBackend } from '../../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { createPatient, details, scheduleVisit, timerEvent, TINY_GIF, TINY_PNG, type User } from './visit-fixtures.ts';

const at = (minute: number) => new Date(Date.parse('2026-11-20T14:00:00Z') + minute * 60_000).toISOString();
const soapBody = (schedule_uuid: string, more: Record<string, unknown> = {}) => ({
  schedule_uuid,
  subjective: 'Reports less knee pain on stairs.',
  objective: 'Gait steady with cane; ROM 0–110°.',
  assessment: 'Progressing toward goals.',
  plan: 'Continue HEP; next visit Friday.',
  ...more,
});

forEachBackend('visits: the visit day', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  async function newVisit(u: User): Promise<string> {
    const patient = await createPatient(server, u);
    return scheduleVisit(server, u, { patient_uuid: patient.uuid, visit_date: '2026-11-20', start_time: '09:00' });
  }
  const sendEvents = (u: User, schedule_uuid: string, events: unknown[], headers: Record<string, string> = {}) =>
    server.api('POST', '/visit-timer-events', { token: u.token, body: { schedule_uuid, events }, headers });

  test('timer events: the full sequence derives EVV and durations; arrive starts the visit; replays are one row', async () => {
    const u = await registerUser(server);
    const id = await newVisit(u);
    const first = await sendEvents(u, id, [timerEvent('start_travel', at(0), { latitude: 41.88, longitude: -87.63, accuracy: 12 })]);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal((await details(server, u, id)).status, 'scheduled');

    // The device re-sends start_travel with the rest (offline replay), in any array order.
    const rest = await sendEvents(u, id, [
      timerEvent('complete', at(85), { latitude: 41.9251, longitude: -87.6521, accuracy: 6 }),
      timerEvent('start_travel', at(0), { latitude: 41.88, longitude: -87.63, accuracy: 12 }),
      timerEvent('arrive', at(25), { latitude: 41.925, longitude: -87.652, accuracy: 5 }),
      timerEvent('start_documentation', at(70)),
    ]);
    assert.equal(rest.status, 200, JSON.stringify(rest.body));
    assert.match(rest.body.message, /3 event\(s\) recorded, 1 already recorded/);
    // Concurrent replays of a stored event: all acknowledged, still one row.
    const replays = await Promise.all([1, 2, 3].map(() => sendEvents(u, id, [timerEvent('arrive', at(25), { latitude: 41.925, longitude: -87.652, accuracy: 5 })])));
    assert.deepEqual(replays.map((r) => r.status), [200, 200, 200]);

    const v = await details(server, u, id);
    assert.equal(v.status, 'in_progress');
    assert.deepEqual(v.timer_events.map((e: { event_type: string }) => e.event_type), ['start_travel', 'arrive', 'start_documentation', 'complete']);
    assert.deepEqual(v.timer_events[1], { uuid: v.timer_events[1].uuid, event_type: 'arrive', event_time: at(25), latitude: 41.925, longitude: -87.652, accuracy: 5 });
    assert.deepEqual(v.evv, {
      travel_started_at: at(0),
      arrived_at: at(25),
      arrival_location: { latitude: 41.925, longitude: -87.652, accuracy: 5 },
      documentation_started_at: at(70),
      departed_at: at(85),
      departure_location: { latitude: 41.9251, longitude: -87.6521, accuracy: 6 },
      drive_minutes: 25,
      onsite_minutes: 60,
      documentation_minutes: 15,
    });
  });

  test('timer events: concurrent batches for one visit apply as if one after the other (a second different arrive is refused)', async () => {
    const u = await registerUser(server);
    const id = await newVisit(u);
    assert.equal((await sendEvents(u, id, [timerEvent('start_travel', at(0))])).status, 200);
    // Each batch alone is valid; together they would give the visit two different arrivals.
    const arrivals = [20, 21, 22, 23, 24, 26];
    const results = await Promise.all(arrivals.map((m) => sendEvents(u, id, [timerEvent('arrive', at(m), { latitude: 41.9, longitude: -87.6, accuracy: 5 })])));
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 422, 422, 422, 422, 422], JSON.stringify(results.map((r) => r.body)));
    const v = await details(server, u, id);
    assert.deepEqual(v.timer_events.map((e: { event_type: string }) => e.event_type), ['start_travel', 'arrive']);
    assert.equal(v.status, 'in_progress');
    assert.equal(v.evv.arrived_at, v.timer_events[1].event_time);
  });

  test('timer events: 422 naming the event for an impossible order; the batch is all-or-nothing; 404 unknown or foreign', async () => {
    const u = await registerUser(server);
    const id = await newVisit(u);
    const orphan = await sendEvents(u, id, [timerEvent('start_travel', at(0)), timerEvent('arrive', at(-5))]);
    assert.equal(orphan.status, 422);
    assert.equal(orphan.body.code, 'invalid_timer_sequence');
    assert.ok(orphan.body.errors['events.1'], JSON.stringify(orphan.body));
    assert.deepEqual((await details(server, u, id)).timer_events, [], 'nothing of the failed batch was stored');

    assert.equal((await sendEvents(u, id, [timerEvent('start_travel', at(0)), timerEvent('arrive', at(20))])).status, 200);
    const secondArrive = await sendEvents(u, id, [timerEvent('start_documentation', at(40)), timerEvent('arrive', at(22))]);
    assert.equal(secondArrive.status, 422);
    assert.ok(secondArrive.body.errors['events.1']);
    const backwards = await sendEvents(u, id, [timerEvent('start_documentation', at(10))]);
    assert.equal(backwards.status, 422);
    assert.ok(backwards.body.errors['events.0']);
    const v = await details(server, u, id);
    assert.equal(v.timer_events.length, 2);

    for (const body of [{ schedule_uuid: id, events: [] }, { schedule_uuid: id, events: [{ event_type: 'lunch', event_time: at(1), latitude: 0, longitude: 0, accuracy: 1 }] }, { schedule_uuid: id, events: [timerEvent('complete', 'yesterday')] }, { events: [timerEvent('arrive', at(1))] }]) {
      assert.equal((await server.api('POST', '/visit-timer-events', { token: u.token, body })).status, 422, JSON.stringify(body));
    }
    assert.equal((await sendEvents(u, crypto.randomUUID(), [timerEvent('start_travel', at(0))])).status, 404);
  });

  test('SOAP: completes the visit; details show the note, flags and signature; a second note is 409; Idempotency-Key replays', async () => {
    const u = await registerUser(server);
    const id = await newVisit(u);
    const vitals = { systolic_bp: 172, diastolic_bp: 96, heart_rate: 128, oxygen_saturation: 97, temperature_f: 98.6 };
    const headers = { 'idempotency-key': `soap-${crypto.randomUUID()}` };
    const body = soapBody(id, { vital_signs: vitals, signature: `data:image/png;base64,${TINY_PNG}` });
    const res = await server.api('POST', '/patient-referral-end-visit-note', { token: u.token, body, headers });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.match(res.body.message, /systolic_bp_high/);
    const replay = await server.api('POST', '/patient-referral-end-visit-note', { token: u.token, body, headers });
    assert.deepEqual([replay.status, replay.headers.get('idempotent-replayed'), replay.body], [200, 'true', res.body]);

    const v = await details(server, u, id);
    assert.equal(v.status, 'completed');
    assert.ok(v.completed_at);
    assert.equal(v.has_note, true);
    const n = v.soap_note;
    assert.deepEqual(
      [n.subjective, n.plan, n.vital_signs, n.vital_flags, n.signed, n.signature_mime, n.signature],
      [body.subjective, body.plan, vitals, ['systolic_bp_high', 'heart_rate_high'], true, 'image/png', `data:image/png;base64,${TINY_PNG}`],
    );
    const second = await server.api('POST', '/patient-referral-end-visit-note', { token: u.token, body: soapBody(id) });
    assert.equal(second.status, 409);
    assert.equal(second.body.code, 'note_already_submitted');

    // Unsigned and without vitals is fine; low values flag too.
    const other = await newVisit(u);
    assert.equal((await server.api('POST', '/patient-referral-end-visit-note', { token: u.token, body: soapBody(other, { vital_signs: { oxygen_saturation: 86, heart_rate: 44 } }) })).status, 200);
    const o = (await details(server, u, other)).soap_note;
    assert.deepEqual([o.signed, o.signature, o.vital_flags], [false, null, ['heart_rate_low', 'oxygen_saturation_low']]);
  });

  test('SOAP: a cancelled visit is 409 visit_cancelled and gets no note', async () => {
    const u = await registerUser(server);
    const id = await newVisit(u);
    // Nothing in the API cancels a visit yet (sync and operators write the status): set it directly.
    const { db } = server.runtime.database;
    await db.execute(sql`update visits set status = 'cancelled' where id = ${id}`);
    const res = await server.api('POST', '/patient-referral-end-visit-note', { token: u.token, body: soapBody(id) });
    assert.deepEqual([res.status, res.body.code], [409, 'visit_cancelled']);
    const v = await details(server, u, id);
    assert.deepEqual([v.status, v.has_note, v.soap_note], ['cancelled', false, null]);
  });

  test('SOAP: 422 for missing sections and unacceptable signatures; 404 unknown visit; nothing completes', async () => {
    const u = await registerUser(server);
    const id = await newVisit(u);
    const random = Buffer.from(Array.from({ length: 64 }, (_, i) => (i * 37 + 11) % 256)).toString('base64');
    const bigPng = Buffer.concat([Buffer.from(TINY_PNG, 'base64'), Buffer.alloc(600 * 1024)]).toString('base64');
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...soapBody(id), assessment: '  ' }, 'assessment'],
      [{ schedule_uuid: id, subjective: 's', objective: 'o', assessment: 'a' }, 'plan'],
      [soapBody(id, { signature: random }), 'signature'],
      [soapBody(id, { signature: TINY_GIF }), 'signature'],
      [soapBody(id, { signature: 'not base64!' }), 'signature'],
      [soapBody(id, { signature: bigPng }), 'signature'],
    ];
    for (const [body, field] of cases) {
      const res = await server.api('POST', '/patient-referral-end-visit-note', { token: u.token, body });
      assert.equal(res.status, 422, `${field}: ${JSON.stringify(res.body)}`);
      assert.ok(res.body.errors?.[field], `${field}: ${JSON.stringify(res.body.errors)}`);
    }
    const v = await details(server, u, id);
    assert.deepEqual([v.status, v.soap_note, v.has_note], ['scheduled', null, false]);
    assert.equal((await server.api('POST', '/patient-referral-end-visit-note', { token: u.token, body: soapBody(crypto.randomUUID()) })).status, 404);
  });

  test('SOAP: vital signs in the shapes devices send are normalised, kept and flagged, never refused', async () => {
    const u = await registerUser(server);
    const submit = async (vital_signs: unknown) => {
      const id = await newVisit(u);
      const res = await server.api('POST', '/patient-referral-end-visit-note', { token: u.token, body: soapBody(id, { vital_signs }) });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return (await details(server, u, id)).soap_note;
    };
    // The shape of issue 9: aliases with units.
    const a = await submit({ bp: '120/80', pulse: 72, spo2: '97%', temp: '37 C', resp: 16, pain: '3/10', weight: { value: 82, unit: 'kg' }, glucose: '110 mg/dL' });
    assert.deepEqual(a.vital_signs, {
      systolic_bp: 120, diastolic_bp: 80, heart_rate: 72, respiratory_rate: 16, temperature_f: 98.6,
      oxygen_saturation: 97, pain_level: 3, blood_glucose: 110, weight_lb: 180.8,
    });
    assert.deepEqual([a.vital_flags, a.review_flags], [[], []]);
    // What the old schema refused: impossible values and unknown members are stored and flagged.
    const b = await submit({ hr: 400, systolic_bp: 80, diastolic_bp: 95, mood: 'fine', o2_sat: 'n/a' });
    assert.deepEqual(b.vital_signs, { systolic_bp: 80, diastolic_bp: 95, heart_rate: 400, unreadable: { o2_sat: 'n/a' }, mood: 'fine' });
    assert.deepEqual(b.vital_flags, ['systolic_bp_low', 'heart_rate_implausible', 'diastolic_bp_implausible']);
    assert.deepEqual(b.review_flags, ['oxygen_saturation_unreadable']);
    // Over the bound: the note is kept with what fits, and flagged for review.
    const many = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`extra_${i}`, 'x'.repeat(300)]));
    const c = await submit({ heart_rate: 70, ...many });
    assert.equal(c.vital_signs.heart_rate, 70);
    assert.ok(Object.keys(c.vital_signs).length <= 50 && JSON.stringify(c.vital_signs).length <= 16 * 1024);
    assert.deepEqual(c.review_flags, ['vital_signs_truncated']);
    // Not an object at all: kept as sent for the clinician to read.
    const d = await submit('BP 120/80 HR 72');
    assert.deepEqual([d.vital_signs, d.review_flags], [{ unreadable: { vital_signs: 'BP 120/80 HR 72' } }, ['vital_signs_unreadable']]);
  });

  test('mileage: travel/onsite split, validation, last writer wins by recorded_at', async () => {
    const u = await registerUser(server);
    const id = await newVisit(u);
    const put = (body: Record<string, unknown>) => server.api('PUT', `/visit/${id}/mileage`, { token: u.token, body });
    const first = await put({ total_miles: 18.4, travel_miles: 16, onsite_miles: 2.4, recorded_at: '2026-11-20T16:00:00Z' });
    assert.deepEqual([first.status, first.body.message], [200, 'Mileage saved']);
    const older = await put({ total_miles: 3, recorded_at: '2026-11-20T15:00:00Z' });
    assert.equal(older.status, 200);
    assert.match(older.body.message, /not applied: a newer entry \(recorded at 2026-11-20T16:00:00.000Z\)/);
    assert.deepEqual((await details(server, u, id)).mileage, { total_miles: 18.4, travel_miles: 16, onsite_miles: 2.4, recorded_at: '2026-11-20T16:00:00.000Z' });
    assert.equal((await put({ total_miles: 20, travel_miles: 20, recorded_at: '2026-11-20T17:00:00Z' })).body.message, 'Mileage saved');
    assert.deepEqual((await details(server, u, id)).mileage, { total_miles: 20, travel_miles: 20, onsite_miles: null, recorded_at: '2026-11-20T17:00:00.000Z' });

    for (const body of [{ total_miles: -1 }, { total_miles: 5, travel_miles: 4, onsite_miles: 2 }, { total_miles: 5, onsite_miles: -0.5 }, {}, { total_miles: 'ten' }]) {
      const res = await put(body);
      assert.equal(res.status, 422, JSON.stringify(body));
    }
    // Stored as numeric(10,2): the split is checked on the rounded values. 1.004 / 0.505 / 0.499
    // would store as 1.00 / 0.51 / 0.50 (travel + onsite > total), so it is refused ...
    const split = await put({ total_miles: 1.004, travel_miles: 0.505, onsite_miles: 0.499, recorded_at: '2026-11-20T18:00:00Z' });
    assert.equal(split.status, 422, JSON.stringify(split.body));
    assert.ok(split.body.errors?.total_miles, JSON.stringify(split.body.errors));
    // ... and a split over by less than half a cent is stored consistently.
    assert.equal((await put({ total_miles: 1.004, travel_miles: 0.5, onsite_miles: 0.5049, recorded_at: '2026-11-20T18:00:00Z' })).status, 200);
    assert.deepEqual((await details(server, u, id)).mileage, { total_miles: 1, travel_miles: 0.5, onsite_miles: 0.5, recorded_at: '2026-11-20T18:00:00.000Z' });
    assert.equal((await server.api('PUT', `/visit/${crypto.randomUUID()}/mileage`, { token: u.token, body: { total_miles: 1 } })).status, 404);
    assert.equal((await server.api('PUT', '/visit/zzz/mileage', { token: u.token, body: { total_miles: 1 } })).status, 404);
  });

  test("tenant isolation: another clinician's visit answers 404 like a random uuid on every uuid endpoint, and changes nothing", async () => {
    const owner = await registerUser(server);
    const intruder = await registerUser(server);
    const id = await newVisit(owner);
    const attempts = (target: string): Array<[string, string, unknown]> => [
      ['GET', `/visit-details/${target}`, undefined],
      ['POST', '/visit-timer-events', { schedule_uuid: target, events: [timerEvent('start_travel', at(0))] }],
      ['POST', '/patient-referral-end-visit-note', soapBody(target)],
      ['PUT', `/visit/${target}/mileage`, { total_miles: 1 }],
    ];
    const random = crypto.randomUUID();
    const foreign = attempts(id);
    const unknown = attempts(random);
    for (let i = 0; i < foreign.length; i++) {
      const [method, path, body] = foreign[i] as [string, string, unknown];
      const a = await server.api(method, path, { token: intruder.token, body });
      const [m2, p2, b2] = unknown[i] as [string, string, unknown];
      const b = await server.api(m2, p2, { token: intruder.token, body: b2 });
      assert.equal(a.status, 404, `${method} ${path}`);
      assert.deepEqual(a.body, b.body, `${method} ${path}`);
    }
    const v = await details(server, owner, id);
    assert.deepEqual([v.status, v.timer_events, v.mileage, v.soap_note], ['scheduled', [], null, null]);
  });

  test('PHI at rest and the audit trail: note text, address and signature are sealed; reads and denied attempts are audited without PHI', async () => {
    const u = await registerUser(server);
    const intruder = await registerUser(server);
    const canary = `CANARY-${crypto.randomUUID()}`;
    const id = await scheduleVisit(server, u, { visit_date: '2026-11-20', start_time: '09:00', address: `${canary} Lane`, notes: canary });
    assert.equal((await server.api('POST', '/patient-referral-end-visit-note', { token: u.token, body: soapBody(id, { subjective: canary, signature: TINY_PNG }) })).status, 200);
    assert.equal((await details(server, u, id)).soap_note.subjective, canary);
    assert.equal((await server.api('GET', `/visit-details/${id}`, { token: intruder.token })).status, 404);

    const { db } = server.runtime.database;
    const raw = await db.execute(sql`select (select coalesce(string_agg(row_to_json(v)::text, ''), '') from visits v) || (select coalesce(string_agg(row_to_json(n)::text, ''), '') from soap_notes n) || (select coalesce(string_agg(row_to_json(a)::text, ''), '') from audit_log a) as dump`);
    const dump = String((raw as unknown as { rows?: Array<{ dump: string }> }).rows?.[0]?.dump ?? (raw as unknown as Array<{ dump: string }>)[0]?.dump);
    assert.ok(dump.length > 100);
    assert.ok(!dump.includes('CANARY-'), 'no plaintext PHI in visits, soap_notes or audit_log');
    assert.ok(!dump.includes(TINY_PNG.slice(0, 40)), 'the signature is sealed');

    const trail = await server.runtime.services.audit.export();
    const mine = trail.filter((e) => e.resource_id === id || (e.resource_type === 'soap_note' && (e.details as { visit_id?: string }).visit_id === id));
    assert.deepEqual(
      mine.map((e) => [e.actor_user_id === u.uuid ? 'owner' : 'intruder', e.action, e.resource_type, e.outcome]),
      [
        ['owner', 'create', 'visit', 'success'],
        ['owner', 'create', 'soap_note', 'success'],
        ['owner', 'read', 'visit', 'success'],
        ['intruder', 'read', 'visit', 'not_found'],
      ],
    );
    assert.ok(mine.every((e) => typeof e.request_id === 'string' && e.request_id.length > 0));
  });
});
