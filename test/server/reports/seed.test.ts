import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { patients, users, visits } from '@fieldchart/schema/db';
import { operationContext, runOperation } from '@fieldchart/server';
import type { DemoSeedResult } from '../../../server/src/services/seed/demo-seed.ts';
import { forEachBackend } from '../../helpers/backends.ts';
import { startTestServer, type TestServer } from '../../helpers/test-server.ts';

forEachBackend('seed --demo', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  const seed = () =>
    runOperation(operationContext(server.runtime.services, server.runtime.database), 'seed.demo', {}) as Promise<DemoSeedResult>;

  test('twice: nothing duplicated; the demo clinician signs in and sees today, the dashboard and reports', async () => {
    const first = await seed();
    assert.equal(first.account_created, true);
    assert.equal(first.patients.created, 12);
    assert.ok(first.visits.total >= 60, `only ${first.visits.total} visits`);
    assert.ok(first.visits.today >= 3 && first.visits.upcoming > 0 && first.visits.completed >= 30, JSON.stringify(first.visits));

    const second = await seed();
    assert.equal(second.account_created, false);
    assert.equal(second.patients.created, 0);
    assert.equal(second.visits.created, 0);
    assert.deepEqual({ ...second.visits, created: 0 }, { ...first.visits, created: 0 });
    const { db } = server.runtime.database;
    const count = async (table: typeof patients | typeof visits | typeof users) => (await db.select({ n: sql<number>`count(*)::int` }).from(table))[0]?.n;
    assert.deepEqual([await count(patients), await count(visits), await count(users)], [12, first.visits.total, 1]);

    // PHI went through the patients service: sealed at rest.
    const raw = await db.select({ first: patients.firstNameEnc, address: patients.addressEnc }).from(patients);
    assert.ok(raw.length === 12 && raw.every((r) => r.first.startsWith('fc1.') && !JSON.stringify(r).includes('Columbus')));

    const signIn = await server.api('POST', '/sign-in', { body: { email: first.email, password: first.password } });
    assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
    const token = signIn.body.data.token as string;

    const upcoming = await server.api('GET', '/get-upcomming-visits', { token });
    assert.equal(upcoming.status, 200, JSON.stringify(upcoming.body));
    assert.equal(upcoming.body.data.today_visit.length, first.visits.today);
    assert.ok(upcoming.body.data.today_visit.every((v: { address: string | null }) => / OH 43\d{3}$/.test(v.address ?? '')));

    const dashboard = await server.api('GET', '/dashboard-action-list', { token });
    assert.equal(dashboard.body.data.stats.today, first.visits.today);
    assert.ok(dashboard.body.data.alerts.late_documentation >= 1);

    const summary = await server.api('GET', `/reports/summary?from=${first.today.slice(0, 4)}-01-01&to=${first.today}`, { token });
    const t = summary.body.data.totals;
    assert.equal(t.completed_visits, first.visits.completed);
    assert.ok(t.total_miles > 0 && t.travel_miles + t.onsite_miles <= t.total_miles && t.visits_with_split < t.visits_with_mileage, JSON.stringify(t));
    assert.ok(t.documentation_minutes > 0 && t.drive_minutes > 0);

    const history = await server.api('GET', '/get-visit-history?record_type=with_notes', { token });
    assert.equal(history.status, 200);
    const detail = await server.api('GET', `/visit-details/${history.body.data[0].schedule_uuid}`, { token });
    assert.equal(detail.status, 200);
    assert.equal(detail.body.data.timer_events.length, 4);
    assert.ok(detail.body.data.evv.arrived_at && detail.body.data.soap_note);
  });
});
