import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { addPatient, addVisit, hoursAfter, signIn } from './report-fixtures.ts';

// Wednesday 17 June 2026, 12:00 in New York (the default time zone): the week is 15–21 June.
const NOW = new Date('2026-06-17T16:00:00Z');

forEachBackend('dashboard, problem notes and progress stats', (backend) => {
  let server: TestServer;
  const clock = manualClock(NOW);
  let a: Awaited<ReturnType<typeof registerUser>>;
  let b: Awaited<ReturnType<typeof registerUser>>;
  const ids: Record<string, string> = {};

  before(async () => {
    server = await startTestServer(backend, { clock });
    a = await registerUser(server);
    b = await registerUser(server);
    const ada = await addPatient(server, a.uuid, { first: 'Ada', last: 'Lovelace' });
    const add = async (key: string, owner: string, v: Parameters<typeof addVisit>[2]) => {
      ids[key] = await addVisit(server, owner, v);
    };
    await add('v1', a.uuid, {
      date: '2026-06-17',
      status: 'completed',
      arrivedAt: new Date('2026-06-17T13:00:00Z'),
      documentationSeconds: 600,
      note: { submittedAt: new Date('2026-06-17T14:00:00Z') },
      mileage: { total: 9.5, travel: 9, onsite: 0.5 },
    });
    await add('v2', a.uuid, { date: '2026-06-17', start: '14:00' });
    await add('v3', a.uuid, { date: '2026-06-17', status: 'cancelled' });
    await add('v4', a.uuid, {
      date: '2026-06-15',
      status: 'completed',
      documentationSeconds: 900,
      note: { submittedAt: new Date('2026-06-15T20:00:00Z'), signed: false },
    });
    await add('v5', a.uuid, { date: '2026-06-16', status: 'in_progress', patientId: ada, arrivedAt: new Date('2026-06-16T13:00:00Z') });
    await add('v6', a.uuid, { date: '2026-06-17', start: '08:30', status: 'in_progress', arrivedAt: new Date('2026-06-17T13:00:00Z') });
    await add('v7', a.uuid, { date: '2026-06-10' });
    await add('v8', a.uuid, {
      date: '2026-06-12',
      status: 'completed',
      ai: true,
      note: { submittedAt: new Date('2026-06-14T15:00:00Z'), reviewFlags: ['medication_dose_unverified'], vitalFlags: ['heart_rate_high'] },
    });
    await add('v9', a.uuid, { date: '2026-06-18' });
    await add('v10', a.uuid, { date: '2026-06-17', deleted: true });
    await add('v11', a.uuid, { date: '2026-04-01', status: 'completed' });
    // Another clinician's visits: today's, late, unsigned; never in A's numbers.
    await add('b1', b.uuid, { date: '2026-06-17' });
    await add('b2', b.uuid, { date: '2026-06-16', status: 'in_progress', arrivedAt: new Date('2026-06-16T12:00:00Z') });
    await add('b3', b.uuid, { date: '2026-06-15', status: 'completed', note: { submittedAt: NOW, signed: false } });
  });
  after(() => server.close());

  test('401 without a bearer token on every dashboard and report endpoint', async () => {
    for (const path of ['/dashboard-action-list', '/progress-stats', '/therapist-earning', '/problem-notes', '/reports/summary', '/reports/time-saved']) {
      const res = await server.api('GET', path);
      assert.equal(res.status, 401, path);
      assert.equal(res.body.status, false);
    }
  });

  test('dashboard stats and alerts follow the documented definitions', async () => {
    clock.set(NOW);
    const res = await server.api('GET', '/dashboard-action-list', { token: a.token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.data, {
      today: '2026-06-17',
      stats: { today: 3, pending: 3, completed: 2 },
      alerts: { late_documentation: 2, unsigned_notes: 1, review_flags: 1, missing_mileage: 2, abnormal_vitals: 1 },
    });
    const other = await server.api('GET', '/dashboard-action-list', { token: b.token });
    assert.deepEqual(other.body.data.stats, { today: 1, pending: 1, completed: 1 });
    assert.deepEqual(other.body.data.alerts, { late_documentation: 1, unsigned_notes: 1, review_flags: 0, missing_mileage: 1, abnormal_vitals: 0 });
  });

  test('"today" is the date in the clinician\'s time zone', async () => {
    // 02:00 UTC on 18 June is still 17 June in New York, but 18 June in Berlin.
    clock.set(new Date('2026-06-18T02:00:00Z'));
    const token = await signIn(server, b);
    try {
      const ny = await server.api('GET', '/dashboard-action-list', { token });
      assert.equal(ny.body.data.today, '2026-06-17');
      assert.equal(ny.body.data.stats.today, 1);
      const put = await server.api('PUT', '/my-settings', { token, body: { time_zone: 'Europe/Berlin' } });
      assert.equal(put.status, 200);
      const berlin = await server.api('GET', '/dashboard-action-list', { token });
      assert.equal(berlin.body.data.today, '2026-06-18');
      assert.equal(berlin.body.data.stats.today, 0);
    } finally {
      await server.api('PUT', '/my-settings', { token, body: { time_zone: 'America/New_York' } });
      clock.set(NOW);
    }
  });

  test('problem notes: late (24 h after arrival), unsigned, review flags; most overdue first', async () => {
    clock.set(NOW);
    const res = await server.api('GET', '/problem-notes', { token: a.token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const got = res.body.data.map((p: { schedule_uuid: string; problems: string[] }) => [p.schedule_uuid, p.problems]);
    assert.deepEqual(got, [
      [ids.v11, ['late_documentation']],
      [ids.v8, ['review_flags']],
      [ids.v4, ['unsigned']],
      [ids.v5, ['late_documentation']],
    ]);
    const v5 = res.body.data.find((p: { schedule_uuid: string }) => p.schedule_uuid === ids.v5);
    assert.deepEqual(v5.patient.first_name + ' ' + v5.patient.last_name, 'Ada Lovelace');
    assert.equal(v5.documentation_due_at, '2026-06-17T13:00:00.000Z');
    assert.equal(v5.has_note, false);
    const v8 = res.body.data.find((p: { schedule_uuid: string }) => p.schedule_uuid === ids.v8);
    assert.deepEqual(v8.soap_note.review_flags, ['medication_dose_unverified']);
    assert.equal(v8.soap_note.assessment, 'Progressing.');
    const v4 = res.body.data.find((p: { schedule_uuid: string }) => p.schedule_uuid === ids.v4);
    assert.equal(v4.soap_note.signed, false);

    // v6 (arrived today at 13:00Z) turns late exactly 24 hours later, not before.
    clock.set(hoursAfter(new Date('2026-06-17T13:00:00Z'), 24 - 1 / 60));
    const later = await signIn(server, a);
    const before24 = await server.api('GET', '/problem-notes', { token: later });
    assert.ok(!before24.body.data.some((p: { schedule_uuid: string }) => p.schedule_uuid === ids.v6));
    clock.set(hoursAfter(new Date('2026-06-17T13:00:00Z'), 24));
    const at24 = await server.api('GET', '/problem-notes', { token: later });
    assert.ok(at24.body.data.some((p: { schedule_uuid: string }) => p.schedule_uuid === ids.v6));
    clock.set(NOW);

    // Tenant isolation: B sees only B's visits.
    const mine = await server.api('GET', '/problem-notes', { token: b.token });
    assert.deepEqual(mine.body.data.map((p: { schedule_uuid: string }) => p.schedule_uuid).sort(), [ids.b2, ids.b3].sort());

    // The PHI read is on the audit trail, without the PHI.
    const audit = await server.runtime.services.audit.export({});
    const entry = audit.find((e) => e.actor_user_id === a.uuid && e.details.route === '/problem-notes');
    assert.ok(entry);
    assert.equal(entry.outcome, 'success');
    assert.equal(entry.details.count, 4);
    assert.ok(!JSON.stringify(audit).includes('Lovelace'));
  });

  test('progress stats: 8 weeks, completed visits, documentation time and on-time rate', async () => {
    clock.set(NOW);
    const res = await server.api('GET', '/progress-stats', { token: a.token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const { weeks, totals } = res.body.data;
    assert.equal(weeks.length, 8);
    assert.equal(weeks[0].week_start, '2026-04-27');
    assert.deepEqual(weeks[7], {
      week_start: '2026-06-15',
      week_end: '2026-06-21',
      visits_completed: 2,
      documentation_minutes_avg: 12.5,
      notes_submitted: 2,
      notes_on_time: 2,
      on_time_rate: 1,
    });
    assert.deepEqual(weeks[6], {
      week_start: '2026-06-08',
      week_end: '2026-06-14',
      visits_completed: 1,
      documentation_minutes_avg: null,
      notes_submitted: 1,
      notes_on_time: 0,
      on_time_rate: 0,
    });
    assert.equal(weeks[0].on_time_rate, null);
    assert.deepEqual(totals, {
      visits_completed: 3,
      documentation_minutes_avg: 12.5,
      notes_submitted: 3,
      notes_on_time: 2,
      on_time_rate: 0.667,
      ai_assisted_visits: 1,
    });
  });
});
