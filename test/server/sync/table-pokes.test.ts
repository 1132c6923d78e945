/**
 * A poke names its table (migration 0026), and a socket poked for one table reads that table's
 * changes alone (feed.ts `streamTable`): over a real socket, a mileage write reaches the device
 * without moving its cursor, and `synced` repeats the last full run's acked_through, and a timer
 * event's two tables make one such run; the device's own mutation, a visit placed anew and a
 * reconnect from the unmoved cursor run the full diff, which sends the rows again as they now
 * are. A table diff declines where only the full diff can answer, and leaves the children of a
 * visit placed anew to it.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { ServerMessage } from '@fieldchart/schema/sync';
import { addDays } from '@fieldchart/schema/rules';
import { feedOf } from '../../../server/src/sync/service-hooks.ts';
import { forEachBackend } from '../../helpers/backends.ts';
import { helloSync, nextFeed, type SyncSocket } from '../../helpers/sync-socket.ts';
import { startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { createPatient, scheduleVisit, timerEvent, utcClinician, type User } from '../visits/visit-fixtures.ts';

const today = () => new Date().toISOString().slice(0, 10);
type Change = Extract<ServerMessage, { type: 'changes' }>['changes'][number];
const tables = (changes: readonly Change[]) => [...new Set(changes.map((c) => c.table))].sort();

forEachBackend('sync: table pokes', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  async function device(user: User, cursor: string | null = null) {
    // Protocol 3: one frame per answer, acked_through in every `synced`.
    const { socket } = await helloSync(server, user.token, randomUUID(), cursor, 3);
    return { socket, first: await nextFeed(socket) };
  }
  const putMileage = async (user: User, visit: string, miles: number, recordedAt: string) => {
    const res = await server.api('PUT', `/visit/${visit}/mileage`, { token: user.token, body: { total_miles: miles, recorded_at: recordedAt } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  };
  /** The `synced` frames that arrive within `ms`: a quiet socket's count after a write. */
  const syncedWithin = async (socket: SyncSocket, ms: number) => {
    const before = socket.received.length;
    await new Promise((resolve) => setTimeout(resolve, ms));
    return socket.received.slice(before).filter((m) => m.type === 'synced').length;
  };

  test('a mileage write reaches the device alone; the cursor stays; acked_through is the last full run’s', async () => {
    const user = await utcClinician(server);
    const patient = await createPatient(server, user);
    const visit = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today(), start_time: '09:00' });
    const { socket, first } = await device(user);
    const cursor = first.synced.cursor;
    assert.equal(first.synced.acked_through, 0);

    const recordedAt = new Date(Date.now() - 60_000).toISOString();
    await putMileage(user, visit, 7.5, recordedAt);
    const poked = await nextFeed(socket);
    assert.deepEqual(tables(poked.changes), ['visit_mileage']);
    const mileage = poked.changes[0];
    assert.ok(mileage?.op === 'upsert');
    assert.equal(mileage.row.total_miles, 7.5);
    assert.equal(poked.checkpoint, cursor, 'a table diff does not move the cursor');
    assert.equal(poked.synced.cursor, cursor);
    assert.equal(poked.synced.acked_through, 0);

    // Another write of the table: only what is new since the table's last diff.
    await putMileage(user, visit, 8.5, new Date(Date.now() - 30_000).toISOString());
    const again = await nextFeed(socket);
    assert.deepEqual(again.changes.map((c) => c.op === 'upsert' && c.table === 'visit_mileage' && c.row.total_miles), [8.5]);
    assert.equal(again.synced.cursor, cursor);

    // The device's own mutation: a full run, a new cursor, acked_through covering it.
    socket.send({ type: 'mutation', mutation_id: 1, name: 'patient.update', args: { uuid: patient.uuid, first_name: 'Ines' }, client_time: new Date().toISOString() });
    await socket.next('ack', (m) => m.mutation_id === 1);
    const full = await socket.next('synced', (m) => (m.acked_through ?? 0) >= 1);
    assert.notEqual(full.cursor, cursor, 'the full run moves the cursor');
    socket.close();

    // A reconnect from the cursor the table diffs left: the full diff sends the mileage again, as it now is.
    const back = await device(user, cursor);
    const row = back.first.changes.find((c) => c.table === 'visit_mileage');
    assert.ok(row?.op === 'upsert');
    assert.equal(row.row.total_miles, 8.5);
    assert.ok(!back.socket.received.some((m) => m.type === 'reset'));
    back.socket.close();
  });

  test('a timer event (its visit and its event) is one run of those two tables; a visit placed anew, the full diff with its children', async () => {
    const user = await utcClinician(server);
    const patient = await createPatient(server, user);
    const visit = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today(), start_time: '09:00' });
    const { socket, first } = await device(user);

    // A timer event writes its event and its visit in one transaction: two pokes, one run.
    const res = await server.api('POST', '/visit-timer-events', { token: user.token, body: { schedule_uuid: visit, events: [timerEvent('start_travel', new Date().toISOString())] } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const tap = await nextFeed(socket);
    assert.deepEqual(tables(tap.changes), ['timer_events', 'visits']);
    assert.equal(tap.synced.cursor, first.synced.cursor, 'the visit written in place: its tables alone, the cursor unmoved');
    assert.equal(await syncedWithin(socket, 300), 0, 'the transaction’s second poke ran no second diff');

    // A patient soft-deleted: the patients table alone, as a tombstone.
    const db = server.runtime.database.db;
    await db.execute(sql`update patients set deleted_at = now() where id = ${patient.uuid}`);
    const tomb = await nextFeed(socket);
    assert.deepEqual(
      tomb.changes.map((c) => [c.table, c.op, c.id]),
      [['patients', 'delete', patient.uuid]],
    );
    assert.equal(tomb.synced.cursor, first.synced.cursor);

    // A visit outside the window with mileage, then rescheduled into it: placed anew, so the
    // poke of visits gives way to the full diff, which brings the mileage nobody wrote since.
    const later = randomUUID();
    await db.execute(sql`insert into visits (id, owner_id, visit_date, start_time) values (${later}::uuid, ${user.uuid}::uuid, ${addDays(today(), 40)}::date, '10:00')`);
    await nextFeed(socket);
    await db.execute(sql`insert into visit_mileage (visit_id, owner_id, total_miles, recorded_at) values (${later}::uuid, ${user.uuid}::uuid, 6, now())`);
    await nextFeed(socket);
    await db.execute(sql`update visits set visit_date = ${today()}::date where id = ${later}::uuid`);
    const placed = await nextFeed(socket);
    assert.deepEqual(
      placed.changes.filter((c) => c.table === 'visits' || c.table === 'visit_mileage').map((c) => [c.table, c.id]).sort(),
      [['visit_mileage', later], ['visits', later]],
    );
    assert.notEqual(placed.synced.cursor, first.synced.cursor, 'the full diff moves the cursor');
    socket.close();
  });

  test('the device’s mutation applied over HTTP while its socket is open: the full run, whose acked_through covers it', async () => {
    const user = await utcClinician(server);
    const patient = await createPatient(server, user);
    const visit = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today(), start_time: '09:00' });
    const clientId = randomUUID();
    const { socket } = await helloSync(server, user.token, clientId, null, 3);
    const first = await nextFeed(socket);
    // One table written (mileage), by the device's own mutation over HTTP (a request still in
    // flight when its socket came up): a table diff would repeat acked_through 0, and the
    // device would wait for a full run a quiet server never makes.
    const mutation = { type: 'mutation', mutation_id: 1, name: 'visit.mileage', args: { uuid: visit, mileage: { total_miles: 4, recorded_at: new Date().toISOString() } }, client_time: new Date().toISOString() };
    const res = await server.api('POST', '/sync/mutations', { token: user.token, body: { client_id: clientId, protocol: 3, mutations: [mutation] } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const run = await nextFeed(socket);
    assert.deepEqual(tables(run.changes), ['visit_mileage']);
    assert.equal(run.synced.acked_through, 1);
    assert.notEqual(run.synced.cursor, first.synced.cursor, 'the full diff ran');
    socket.close();
  });

  test('feed: a table diff declines, sending nothing, where only the full diff can answer', async () => {
    const feed = feedOf(server.runtime.services);
    const db = server.runtime.database.db;
    const user = await utcClinician(server);
    const patient = await createPatient(server, user);
    const visit = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today(), start_time: '09:00' });
    const now = new Date();
    const { cursor } = await feed.read(user.uuid, null, now);
    await putMileage(user, visit, 2, new Date(now.getTime() - 1000).toISOString());
    const sent: string[] = [];
    const sink = { change: (json: string) => sent.push(json) };
    const alone = (c: string, options: { timeZone?: string; now?: Date } = {}) => feed.streamTable(user.uuid, ['visit_mileage'], c, null, options.now ?? now, { timeZone: options.timeZone ?? 'UTC' }, sink);

    const read = await alone(cursor);
    assert.ok(read);
    assert.equal(read.count, 1);
    assert.equal(sent.length, 1);
    const since = await feed.streamTable(user.uuid, ['visit_mileage'], cursor, read.snapshot, now, { timeZone: 'UTC' }, sink);
    assert.equal(since?.count, 0, 'nothing new since the table’s last diff');
    sent.length = 0;

    assert.equal(await alone('v1.not-a-cursor'), null, 'a cursor this server did not write');
    assert.equal(await alone(cursor, { now: new Date(now.getTime() + 2 * 86_400_000) }), null, 'the window moved');
    assert.equal(await alone(cursor, { timeZone: 'Asia/Tokyo' }), null, 'the clinician’s time zone is another');
    const client = randomUUID();
    const asDevice = (ackedThrough: number) => feed.streamTable(user.uuid, ['visit_mileage'], cursor, null, now, { timeZone: 'UTC', clientId: client, ackedThrough }, sink);
    assert.equal(await asDevice(3), null, 'the device’s mutations moved since its last full read (none recorded: 0)');
    assert.equal((await asDevice(0))?.count, 1);
    sent.length = 0;
    await db.execute(sql`update users set feature_overrides = '{"copy_last_visit": true}'::jsonb where id = ${user.uuid}`);
    assert.equal(await alone(cursor), null, 'the configuration changed');
    assert.deepEqual(sent, [], 'a declined table diff sends nothing');
    const full = await feed.read(user.uuid, cursor, now);
    assert.deepEqual(tables(full.changes), ['organization_config', 'visit_mileage']);
  });

  test('feed: a table diff leaves the children of a visit placed anew to the full diff, which sends them with it', async () => {
    const feed = feedOf(server.runtime.services);
    const db = server.runtime.database.db;
    const user = await utcClinician(server);
    const now = new Date();
    const id = randomUUID();
    await db.execute(sql`insert into visits (id, owner_id, visit_date, start_time) values (${id}::uuid, ${user.uuid}::uuid, ${addDays(today(), 40)}::date, '09:00')`);
    await db.execute(sql`insert into visit_mileage (visit_id, owner_id, total_miles, recorded_at) values (${id}::uuid, ${user.uuid}::uuid, 3, now())`);
    const { cursor } = await feed.read(user.uuid, null, now);
    await db.execute(sql`update visits set visit_date = ${today()}::date where id = ${id}::uuid`);
    const sent: string[] = [];
    const read = await feed.streamTable(user.uuid, ['visit_mileage'], cursor, null, now, { timeZone: 'UTC' }, { change: (json) => sent.push(json) });
    assert.equal(read?.count, 0, 'the mileage did not change: it comes with its visit');
    const full = await feed.read(user.uuid, cursor, now);
    assert.deepEqual(tables(full.changes), ['visit_mileage', 'visits']);
  });
});
