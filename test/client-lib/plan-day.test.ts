/**
 * Re-planning the day on the device: with the same knowledge (locations learned from the same
 * accurate arrive fixes, the same policy, great-circle times) the offline client's planDay
 * answers exactly what the server's POST /scheduling/optimize answers — with the device cut
 * off from the server. Too few placed visits is the server's 422 as a PlanDayError.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PlanDayError } from '../../client-lib/src/index.ts';
import { forEachBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { utcClinician } from '../server/visits/visit-fixtures.ts';
import { openClient } from './support.ts';

const dayOffset = (n: number) => new Date(Date.now() + n * 86_400_000).toISOString().slice(0, 10);

forEachBackend('offline client: planDay', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('planDay offline equals the server’s optimize on the same knowledge; lock_first too; too few → PlanDayError', async () => {
    const user = await utcClinician(server);
    const api = (method: string, path: string, body?: unknown) => server.api(method, path, { token: user.token, ...(body === undefined ? {} : { body }) });
    const yesterday = dayOffset(-1);
    const tomorrow = dayOffset(1);
    // Five patients across Columbus; where each really is comes from yesterday's arrive fixes.
    const places = [
      { lat: 40.0586, lng: -83.0176 },
      { lat: 39.9436, lng: -82.9882 },
      { lat: 40.0022, lng: -82.9871 },
      { lat: 39.9612, lng: -82.9988 },
      { lat: 39.9651, lng: -82.9547 },
    ];
    const day: string[] = [];
    for (const [i, place] of places.entries()) {
      const p = await api('POST', '/patient/create', { first_name: 'Pat', last_name: `Number${i}`, address: `${100 + i} Main St, Columbus, OH 43215` });
      assert.equal(p.status, 200, JSON.stringify(p.body));
      const past = await api('POST', '/schedule-visit-request-save', { patient_uuid: p.body.data.uuid, visit_date: yesterday, start_time: `0${8 + i}:00`.slice(-5) });
      const fix = (event_type: string, t: string, accuracy: number, at = place) => ({ event_type, event_time: `${yesterday}T${t}:00Z`, latitude: at.lat, longitude: at.lng, accuracy });
      const events = [fix('start_travel', `0${7 + i}:40`.slice(-5), 20), fix('arrive', `0${8 + i}:00`.slice(-5), 15)];
      assert.equal((await api('POST', '/visit-timer-events', { schedule_uuid: past.body.data.uuid, events })).status, 200);
      // Tomorrow, in a zig-zag order.
      const order = [3, 0, 4, 1, 2].indexOf(i);
      const v = await api('POST', '/schedule-visit-request-save', { patient_uuid: p.body.data.uuid, visit_date: tomorrow, start_time: `${String(9 + order).padStart(2, '0')}:30` });
      day.push(v.body.data.uuid);
    }
    const later = dayOffset(2);
    const extra: string[] = [];
    for (const [i, t] of ['09:00', '10:00', '11:00'].entries()) {
      const v = await api('POST', '/schedule-visit-request-save', { visit_date: later, start_time: t, address: `${i + 1} Broad St, Columbus, OH 43215` });
      extra.push(v.body.data.uuid);
    }
    const policy = { home_base_lat: 40.0992, home_base_lng: -83.0171, buffer_minutes: 12, day_start: '07:45', default_visit_minutes: 45 };
    assert.equal((await api('PUT', '/scheduling/policy', policy)).status, 200);
    const serverPlan = await api('POST', '/scheduling/optimize', { date: tomorrow });
    assert.equal(serverPlan.status, 200, JSON.stringify(serverPlan.body));
    assert.equal(serverPlan.body.data.routing_source, 'great_circle');
    const serverLocked = await api('POST', '/scheduling/optimize', { date: tomorrow, lock_first: true });
    assert.equal(serverLocked.status, 200);

    const proxy = await startTcpProxy(server.url);
    const device = await openClient(proxy.url);
    try {
      await device.signIn({ email: user.email, password: user.password });
      await device.sync.whenSynced({ timeoutMs: 30_000 });
      const savedPolicy = await device.rest.scheduling.policy();
      proxy.cut();
      await eventually(() => assert.ok(!device.sync.status.connected, 'not yet: !device.sync.status.connected'), { timeoutMs: 20_000 });

      const plan = await device.visits.planDay(tomorrow, { policy: savedPolicy });
      assert.deepEqual(plan, serverPlan.body.data);
      assert.ok(plan.savings.minutes > 0, 'the zig-zag is improved');
      assert.deepEqual(await device.visits.planDay(tomorrow, { policy: savedPolicy, lockFirst: true }), serverLocked.body.data);

      // Without the policy: no home base, the day starts at 08:00.
      const open = await device.visits.planDay(tomorrow);
      assert.deepEqual([open.visits.length, open.visits[0]?.suggested_start_time, open.visits[0]?.drive_minutes], [5, '08:00', 0]);
      // Visits with no patient and no fixes: the device cannot place them (the ZIP data stays on the server) …
      await assert.rejects(device.visits.planDay(later), (err: unknown) => err instanceof PlanDayError && err.code === 'too_few_geocodable_visits');
      // … unless the app knows where they are.
      const given = await device.visits.planDay(later, { locations: Object.fromEntries(extra.map((id, i) => [id, places[i]!])) });
      assert.deepEqual([...given.visits.map((v) => v.schedule_uuid)].sort(), [...extra].sort());
      assert.deepEqual(given.unrouted, []);
    } finally {
      await device.close();
      await proxy.close();
    }
  });
});
