import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { orgWithAdmin, memberOf } from '../organizations/org-fixtures.ts';
import { addPatient, addVisit, signIn } from './report-fixtures.ts';

// Wednesday 17 June 2026, 12:00 in New York.
const NOW = new Date('2026-06-17T16:00:00Z');

forEachBackend('reports: summary, time saved, earnings', (backend) => {
  let server: TestServer;
  const clock = manualClock(NOW);

  before(async () => {
    server = await startTestServer(backend, { clock });
  });
  after(() => server.close());

  test('summary: defaults to the current year in the clinician\'s zone; travel/onsite only from visits with the split', async () => {
    const u = await registerUser(server);
    const other = await registerUser(server);
    const pat = await addPatient(server, u.uuid, { first: 'Grace', last: 'Hopper' });
    await addVisit(server, u.uuid, {
      date: '2026-03-02',
      status: 'completed',
      patientId: pat,
      driveSeconds: 1200,
      onsiteSeconds: 2700,
      documentationSeconds: 900,
      note: { submittedAt: new Date('2026-03-02T18:00:00Z') },
      mileage: { total: 20, travel: 15, onsite: 5 },
    });
    await addVisit(server, u.uuid, { date: '2026-05-05', status: 'completed', ai: true, mileage: { total: 12.4 } });
    await addVisit(server, u.uuid, { date: '2026-12-31', start: '17:00', status: 'cancelled' });
    await addVisit(server, u.uuid, { date: '2025-12-31', status: 'completed', mileage: { total: 50, travel: 40, onsite: 10 } });
    await addVisit(server, u.uuid, { date: '2027-01-01' });
    await addVisit(server, u.uuid, { date: '2026-04-01', deleted: true, mileage: { total: 99 } });
    await addVisit(server, other.uuid, { date: '2026-04-01', status: 'completed', mileage: { total: 77, travel: 70, onsite: 7 } });

    // 23:30 on 31 Dec 2026 in Chicago is already 2027 in UTC and New York.
    clock.set(new Date('2027-01-01T05:30:00Z'));
    try {
      const token = await signIn(server, u);
      assert.equal((await server.api('PUT', '/my-settings', { token, body: { time_zone: 'America/Chicago' } })).status, 200);
      const res = await server.api('GET', '/reports/summary', { token });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const { data } = res.body;
      assert.equal(data.from, '2026-01-01');
      assert.equal(data.to, '2026-12-31');
      assert.deepEqual(data.totals, {
        visits: 3,
        completed_visits: 2,
        cancelled_visits: 1,
        ai_assisted_visits: 1,
        notes_submitted: 1,
        visits_with_mileage: 2,
        visits_with_split: 1,
        total_miles: 32.4,
        travel_miles: 15,
        onsite_miles: 5,
        drive_minutes: 20,
        onsite_minutes: 45,
        documentation_minutes: 15,
      });
      assert.ok(data.totals.travel_miles + data.totals.onsite_miles < data.totals.total_miles);
      assert.deepEqual(
        data.visits.map((v: { visit_date: string; total_miles: number | null; travel_miles: number | null }) => [v.visit_date, v.total_miles, v.travel_miles]),
        [
          ['2026-03-02', 20, 15],
          ['2026-05-05', 12.4, null],
          ['2026-12-31', null, null],
        ],
      );
      assert.deepEqual(data.visits[0].patient, { uuid: pat, first_name: 'Grace', last_name: 'Hopper' });
      assert.equal(data.visits[0].documentation_minutes, 15);

      const ranged = await server.api('GET', '/reports/summary?from=2025-12-01&to=2026-03-31', { token });
      assert.equal(ranged.status, 200);
      assert.deepEqual([ranged.body.data.totals.visits, ranged.body.data.totals.total_miles, ranged.body.data.totals.travel_miles], [2, 70, 55]);

      for (const q of ['from=2026-02-30', 'to=2026-13-01', 'from=yesterday', 'from=2026-05-01&to=2026-04-30', 'from=2020-01-01&to=2026-01-01']) {
        const bad = await server.api('GET', `/reports/summary?${q}`, { token });
        assert.equal(bad.status, 422, q);
        assert.equal(bad.body.status, false);
        assert.ok(bad.body.errors, q);
      }
      const audit = await server.runtime.services.audit.export({});
      assert.ok(audit.some((e) => e.actor_user_id === u.uuid && e.details.route === '/reports/summary' && e.details.count === 3));
      assert.ok(!JSON.stringify(audit).includes('Hopper'));
    } finally {
      clock.set(NOW);
    }
  });

  test('time saved: thin samples make no claim; 10 of each do; only completed, timed visits in range count', async () => {
    const u = await registerUser(server);
    const day = (i: number) => `2026-06-${String(1 + i).padStart(2, '0')}`;
    for (let i = 0; i < 10; i++) await addVisit(server, u.uuid, { date: day(i), status: 'completed', ai: true, documentationSeconds: 600 });
    for (let i = 0; i < 9; i++) await addVisit(server, u.uuid, { date: day(i), status: 'completed', documentationSeconds: 1500 });
    // Not counted: before the 90-day window, not completed, untimed, another clinician's.
    await addVisit(server, u.uuid, { date: '2026-03-18', status: 'completed', documentationSeconds: 100 });
    await addVisit(server, u.uuid, { date: '2026-06-10', status: 'in_progress', documentationSeconds: 100 });
    await addVisit(server, u.uuid, { date: '2026-06-10', status: 'completed' });
    const stranger = await registerUser(server);
    await addVisit(server, stranger.uuid, { date: '2026-06-10', status: 'completed', documentationSeconds: 3000 });

    const thin = await server.api('GET', '/reports/time-saved', { token: u.token });
    assert.equal(thin.status, 200, JSON.stringify(thin.body));
    assert.equal(thin.body.data.from, '2026-03-19');
    assert.equal(thin.body.data.to, '2026-06-17');
    assert.equal(thin.body.data.sufficient_data, false);
    assert.match(thin.body.data.note, /9 manual/);
    assert.equal(thin.body.data.minutes_saved_per_visit, null);
    assert.equal(thin.body.data.total_minutes_saved, null);
    assert.deepEqual(thin.body.data.ai_assisted, { visits: 10, documentation_minutes_avg: 10, documentation_minutes_median: 10 });

    await addVisit(server, u.uuid, { date: '2026-06-12', status: 'completed', documentationSeconds: 1500 });
    const enough = await server.api('GET', '/reports/time-saved?scope=me', { token: u.token });
    assert.equal(enough.body.data.sufficient_data, true);
    assert.equal(enough.body.data.note, null);
    assert.equal(enough.body.data.manual.visits, 10);
    assert.equal(enough.body.data.minutes_saved_per_visit, 15);
    assert.equal(enough.body.data.total_minutes_saved, 150);

    const narrow = await server.api('GET', '/reports/time-saved?from=2026-06-01&to=2026-06-05', { token: u.token });
    assert.equal(narrow.body.data.sufficient_data, false);

    for (const q of ['scope=team', 'from=2026-02-31', 'from=2026-06-10&to=2026-06-01']) {
      const bad = await server.api('GET', `/reports/time-saved?${q}`, { token: u.token });
      assert.equal(bad.status, 422, q);
    }
  });

  test('time saved for an organization: admins only (403 otherwise), every member\'s visits', async () => {
    const solo = await registerUser(server);
    const denied = await server.api('GET', '/reports/time-saved?scope=organization', { token: solo.token });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.code, 'not_organization_admin');

    const org = await orgWithAdmin(server);
    const member = await memberOf(server, org);
    const outsider = await registerUser(server);
    for (let i = 0; i < 10; i++) {
      await addVisit(server, org.admin.uuid, { date: '2026-06-02', status: 'completed', ai: true, documentationSeconds: 480, organizationId: org.uuid });
      await addVisit(server, member.uuid, { date: '2026-06-03', status: 'completed', documentationSeconds: 1200, organizationId: org.uuid });
      await addVisit(server, outsider.uuid, { date: '2026-06-03', status: 'completed', documentationSeconds: 60 });
    }
    const asMember = await server.api('GET', '/reports/time-saved?scope=organization', { token: member.token });
    assert.equal(asMember.status, 403);

    const res = await server.api('GET', '/reports/time-saved?scope=organization', { token: org.admin.token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.scope, 'organization');
    assert.equal(res.body.data.sufficient_data, true);
    assert.deepEqual([res.body.data.ai_assisted.visits, res.body.data.manual.visits], [10, 10]);
    assert.equal(res.body.data.minutes_saved_per_visit, 12);

    const mine = await server.api('GET', '/reports/time-saved', { token: org.admin.token });
    assert.equal(mine.body.data.sufficient_data, false);
    assert.match(mine.body.data.note, /0 manual/);
  });

  test('time saved for an organization counts the visits recorded under it: not a newcomer\'s earlier work, still a leaver\'s', async () => {
    const org = await orgWithAdmin(server);
    const elsewhere = await orgWithAdmin(server);
    const leaver = await memberOf(server, org);
    const newcomer = await memberOf(server, org);
    for (let i = 0; i < 10; i++) {
      await addVisit(server, org.admin.uuid, { date: '2026-06-02', status: 'completed', ai: true, documentationSeconds: 480, organizationId: org.uuid });
      await addVisit(server, leaver.uuid, { date: '2026-06-03', status: 'completed', documentationSeconds: 1200, organizationId: org.uuid });
      // Before joining: solo (no organization) and at another organization.
      await addVisit(server, newcomer.uuid, { date: '2026-06-01', status: 'completed', documentationSeconds: 60, organizationId: null });
      await addVisit(server, newcomer.uuid, { date: '2026-06-01', status: 'completed', ai: true, documentationSeconds: 60, organizationId: elsewhere.uuid });
    }
    const left = await server.api('POST', '/my-organization/leave', { token: leaver.token });
    assert.equal(left.status, 200, JSON.stringify(left.body));

    const res = await server.api('GET', '/reports/time-saved?scope=organization', { token: org.admin.token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual([res.body.data.ai_assisted.visits, res.body.data.manual.visits], [10, 10]);
    assert.equal(res.body.data.minutes_saved_per_visit, 12);
    const theirs = await server.api('GET', '/reports/time-saved?scope=organization', { token: elsewhere.admin.token });
    assert.deepEqual([theirs.body.data.ai_assisted.visits, theirs.body.data.manual.visits], [10, 0]);
  });

  test('built through the patient and visit endpoints: reports read what the visit day wrote', async () => {
    clock.set(NOW);
    const u = await registerUser(server);
    const token = u.token;
    const post = async (path: string, body: unknown) => {
      const res = await server.api('POST', path, { token, body });
      assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
      return res.body;
    };
    const patient = (await post('/patient/create', { first_name: 'Alan', last_name: 'Turing', address: '1 Capitol Square, Columbus, OH 43215' })).data.uuid;
    const schedule = async (date: string, start: string, type: string) =>
      (await post('/schedule-visit-request-save', { patient_uuid: patient, visit_date: date, start_time: start, visit_type: type })).data.uuid as string;
    const gps = { latitude: 39.9612, longitude: -82.9988, accuracy: 8 };
    const timer = (uuid: string, events: Array<[string, string]>) =>
      post('/visit-timer-events', { schedule_uuid: uuid, events: events.map(([event_type, event_time]) => ({ event_type, event_time, ...gps })) });
    const soap = { subjective: 'Better.', objective: 'Walked 100 ft.', assessment: 'Progressing.', plan: 'Continue.' };
    const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

    // A: yesterday 09:00 EDT, fully documented, signed, mileage with the split.
    const a = await schedule('2026-06-16', '09:00', 'routine');
    await timer(a, [['start_travel', '2026-06-16T12:40:00Z'], ['arrive', '2026-06-16T13:00:00Z'], ['start_documentation', '2026-06-16T13:45:00Z'], ['complete', '2026-06-16T14:00:00Z']]);
    await post('/patient-referral-end-visit-note', { schedule_uuid: a, ...soap, signature: png });
    assert.equal((await server.api('PUT', `/visit/${a}/mileage`, { token, body: { total_miles: 10, travel_miles: 8, onsite_miles: 2 } })).status, 200);
    // B: yesterday 11:00 EDT, arrived, never documented: late 24 h after arrival.
    const b = await schedule('2026-06-16', '11:00', 'evaluation');
    await timer(b, [['start_travel', '2026-06-16T14:45:00Z'], ['arrive', '2026-06-16T15:00:00Z']]);
    // C: today, documented without a signature, abnormal blood pressure, mileage without a split.
    const c = await schedule('2026-06-17', '09:00', 'routine');
    await timer(c, [['start_travel', '2026-06-17T12:45:00Z'], ['arrive', '2026-06-17T13:00:00Z']]);
    await post('/patient-referral-end-visit-note', { schedule_uuid: c, ...soap, vital_signs: { systolic_bp: 172, diastolic_bp: 98 } });
    assert.equal((await server.api('PUT', `/visit/${c}/mileage`, { token, body: { total_miles: 7 } })).status, 200);

    const dash = await server.api('GET', '/dashboard-action-list', { token });
    assert.deepEqual(dash.body.data.stats, { today: 1, pending: 1, completed: 2 });
    assert.deepEqual(dash.body.data.alerts, { late_documentation: 1, unsigned_notes: 1, review_flags: 0, missing_mileage: 0, abnormal_vitals: 1 });

    const problems = await server.api('GET', '/problem-notes', { token });
    assert.deepEqual(
      problems.body.data.map((p: { schedule_uuid: string; problems: string[]; patient: { last_name: string } }) => [p.schedule_uuid, p.problems, p.patient.last_name]),
      [
        [b, ['late_documentation'], 'Turing'],
        [c, ['unsigned'], 'Turing'],
      ],
    );

    const summary = await server.api('GET', '/reports/summary?from=2026-06-01&to=2026-06-30', { token });
    const t = summary.body.data.totals;
    assert.deepEqual(
      [t.visits, t.completed_visits, t.total_miles, t.travel_miles, t.onsite_miles, t.documentation_minutes, t.drive_minutes],
      [3, 2, 17, 8, 2, 15, 50],
    );

    const earning = await server.api('GET', '/therapist-earning', { token });
    assert.deepEqual(
      [earning.body.data.this_week.visit_pay, earning.body.data.this_week.reimbursable_miles, earning.body.data.this_week.total],
      [160, 15, 170.5],
    );

    const progress = await server.api('GET', '/progress-stats', { token });
    const week = progress.body.data.weeks.at(-1);
    assert.deepEqual([week.visits_completed, week.notes_submitted, week.notes_on_time], [2, 2, 1]);
  });

  test('earnings: pay rates by visit type for completed visits, mileage at the rate (travel miles, else total)', async () => {
    const u = await registerUser(server);
    const put = await server.api('PUT', '/my-settings', { token: u.token, body: { pay_rates: { routine: 85 }, mileage_rate: 0.7 } });
    assert.equal(put.status, 200);
    await addVisit(server, u.uuid, { date: '2026-06-15', status: 'completed', type: 'routine', mileage: { total: 10, travel: 8, onsite: 2 } });
    await addVisit(server, u.uuid, { date: '2026-06-16', status: 'completed', type: 'evaluation', mileage: { total: 12 } });
    await addVisit(server, u.uuid, { date: '2026-06-02', status: 'completed', type: 'routine' });
    await addVisit(server, u.uuid, { date: '2026-02-10', status: 'completed', type: 'reassessment', mileage: { total: 5, travel: 5, onsite: 0 } });
    await addVisit(server, u.uuid, { date: '2026-06-17', type: 'routine', mileage: { total: 4 } });
    await addVisit(server, u.uuid, { date: '2025-12-30', status: 'completed', type: 'routine', mileage: { total: 30 } });
    await addVisit(server, u.uuid, { date: '2026-06-16', status: 'cancelled', type: 'evaluation', mileage: { total: 30 } });
    const other = await registerUser(server);
    await addVisit(server, other.uuid, { date: '2026-06-16', status: 'completed', type: 'evaluation', mileage: { total: 30 } });

    const res = await server.api('GET', '/therapist-earning', { token: u.token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const d = res.body.data;
    assert.equal(d.currency, 'USD');
    assert.equal(d.mileage_rate, 0.7);
    assert.deepEqual(
      { ...d.this_week, by_visit_type: undefined },
      { from: '2026-06-15', to: '2026-06-17', completed_visits: 2, visit_pay: 215, reimbursable_miles: 20, mileage_reimbursement: 14, total: 229, by_visit_type: undefined },
    );
    assert.deepEqual(d.this_month.by_visit_type, [
      { visit_type: 'evaluation', visits: 1, rate: 130, amount: 130 },
      { visit_type: 'routine', visits: 2, rate: 85, amount: 170 },
    ]);
    assert.deepEqual([d.this_month.from, d.this_month.visit_pay, d.this_month.total], ['2026-06-01', 300, 314]);
    assert.deepEqual(
      [d.year_to_date.from, d.year_to_date.completed_visits, d.year_to_date.visit_pay, d.year_to_date.reimbursable_miles, d.year_to_date.mileage_reimbursement, d.year_to_date.total],
      ['2026-01-01', 4, 395, 25, 17.5, 412.5],
    );
  });
});
