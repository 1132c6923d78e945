/**
 * What is in a device's scope and how it changes: organization configuration reaching the
 * device, a seat change closing the socket (4410) and resetting the feed, the visit window
 * moving with the days, a visit rescheduled out of the window, and a change on one server
 * node reaching a device on another (PostgreSQL LISTEN/NOTIFY).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { CLOSE_CODES } from '@fieldchart/schema/sync';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { helloSync, nextFeed } from '../../helpers/sync-socket.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { createPatient, scheduleVisit, timerEvent, type User, utcClinician } from '../visits/visit-fixtures.ts';

const dateAfter = (base: Date, days: number) => new Date(base.getTime() + days * 86_400_000).toISOString().slice(0, 10);

forEachBackend('sync scope', (backend) => {
  const clock = manualClock(new Date('2026-11-21T12:00:00Z'));
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend, { clock });
  });
  after(() => server.close());

  const clinician = (): Promise<User> => utcClinician(server);

  async function signIn(user: User): Promise<string> {
    const res = await server.api('POST', '/sign-in', { body: { email: user.email, password: user.password } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.data.token as string;
  }

  test('feature changes reach the device as its organization_config row', async () => {
    const user = await clinician();
    const { socket } = await helloSync(server, user.token, randomUUID());
    const first = await nextFeed(socket);
    const config = first.changes.find((c) => c.table === 'organization_config');
    assert.ok(config?.op === 'upsert');
    assert.equal((config.row as { source: string }).source, 'solo');
    const current = (config.row as { features: Record<string, boolean> }).features.ai_voice;
    const res = await server.api('PUT', '/my-settings/features', { token: user.token, body: { features: { ai_voice: !current } } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const next = await nextFeed(socket);
    const changed = next.changes.find((c) => c.table === 'organization_config');
    assert.ok(changed?.op === 'upsert');
    assert.equal((changed.row as { features: Record<string, boolean> }).features.ai_voice, !current);
    socket.close();
  });

  test('a seat change closes the socket with 4410, and the next sync is a reset', async () => {
    const user = await clinician();
    const clientId = randomUUID();
    const { socket } = await helloSync(server, user.token, clientId);
    const first = await nextFeed(socket);
    const orgId = randomUUID();
    const db = server.runtime.database.db;
    await db.execute(sql`insert into organizations (id, name, type, status) values (${orgId}, 'Lakeside Home Health', 'home_health_agency', 'active')`);
    await db.execute(sql`insert into organization_members (organization_id, user_id, role) values (${orgId}, ${user.uuid}, 'member')`);
    assert.equal((await socket.closed).code, CLOSE_CODES.scope_changed);

    const again = await helloSync(server, user.token, clientId, first.checkpoint);
    assert.equal((await again.socket.next('reset')).reason, 'scope_changed');
    const feed = await nextFeed(again.socket);
    const config = feed.changes.find((c) => c.table === 'organization_config');
    assert.ok(config?.op === 'upsert');
    assert.deepEqual((config.row as { organization: unknown }).organization, { uuid: orgId, name: 'Lakeside Home Health' });
    again.socket.close();
  });

  test('the window moves with the days: a visit it takes in is sent with its children, unwritten', async () => {
    const user = await clinician();
    const patient = await createPatient(server, user);
    const start = clock.now();
    // 15 days ahead: one day beyond the window today, inside it tomorrow.
    const later = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: dateAfter(start, 15), start_time: '09:00' });
    const clientId = randomUUID();
    const { socket, welcome } = await helloSync(server, user.token, clientId);
    assert.equal(welcome.window.to, dateAfter(start, 14));
    const first = await nextFeed(socket);
    assert.ok(!first.changes.some((c) => c.id === later));
    socket.close();

    clock.advance(86_400);
    try {
      const token = await signIn(user);
      const next = await helloSync(server, token, clientId, first.checkpoint);
      assert.equal(next.welcome.window.to, dateAfter(start, 15));
      const feed = await nextFeed(next.socket);
      assert.ok(!next.socket.received.some((m) => m.type === 'reset'), 'a moved window is a diff, not a reset');
      assert.deepEqual(feed.changes.filter((c) => c.table === 'visits').map((c) => [c.op, c.id]), [['upsert', later]]);
      assert.ok(!feed.changes.some((c) => c.table === 'patients'), 'unchanged rows are not re-sent');
      next.socket.close();
    } finally {
      clock.advance(-86_400);
    }
  });

  test('a visit rescheduled out of the window leaves the device as a delete', async () => {
    const user = await clinician();
    const patient = await createPatient(server, user);
    const visit = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: dateAfter(clock.now(), 1), start_time: '09:00' });
    const { socket } = await helloSync(server, user.token, randomUUID());
    const first = await nextFeed(socket);
    assert.ok(first.changes.some((c) => c.id === visit && c.op === 'upsert'));
    await server.runtime.database.db.execute(sql`update visits set visit_date = ${dateAfter(clock.now(), 60)} where id = ${visit}`);
    const feed = await nextFeed(socket);
    assert.deepEqual(feed.changes.filter((c) => c.table === 'visits').map((c) => [c.op, c.id]), [['delete', visit]]);
    socket.close();
  });

  test('a change through one node reaches a device on another', { skip: backend.name !== 'postgres' && 'one process holds a PGlite data dir' }, async () => {
    // Same database and same keys (signing and PHI) as node A: what two nodes of one deployment share.
    const nodeB = await startTestServer(backend, { clock, peer: server });
    try {
      const user = await clinician();
      const patient = await createPatient(server, user);
      const visit = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: dateAfter(clock.now(), 0), start_time: '13:00' });
      const { socket } = await helloSync(nodeB, user.token, randomUUID());
      await nextFeed(socket);
      const res = await server.api('POST', '/visit-timer-events', {
        token: user.token,
        body: { schedule_uuid: visit, events: [timerEvent('start_travel', clock.now().toISOString())] },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const feed = await nextFeed(socket);
      assert.ok(feed.changes.some((c) => c.table === 'timer_events'));
      // A logout on node A closes the socket on node B.
      assert.equal((await server.api('POST', '/logout', { token: user.token })).status, 200);
      assert.equal((await socket.closed).code, CLOSE_CODES.unauthorized);
    } finally {
      await nodeB.close();
    }
  });
});
