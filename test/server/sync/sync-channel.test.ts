/**
 * The sync channel over a real socket: first-message authentication and its close codes, the
 * change feed (first sync, resume from a cursor, live changes, tombstones), exactly-once
 * mutations through the REST services, and revocation closing the socket.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { CLOSE_CODES, SUPPORTED_PROTOCOLS, protocolsNamedIn } from '@fieldchart/schema/sync';
import { forEachBackend } from '../../helpers/backends.ts';
import { helloSync, nextFeed, openSync } from '../../helpers/sync-socket.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { createPatient, scheduleVisit, timerEvent, type User, utcClinician } from '../visits/visit-fixtures.ts';

const today = () => new Date().toISOString().slice(0, 10);
const daysFromToday = (n: number) => new Date(Date.now() + n * 86_400_000).toISOString().slice(0, 10);

forEachBackend('sync channel', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  const clinician = (): Promise<User> => utcClinician(server);

  test('hello → welcome, a first sync resets and sends the scope, then synced', async () => {
    const user = await clinician();
    const patient = await createPatient(server, user);
    const inWindow = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today(), start_time: '09:00' });
    const tooFar = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: daysFromToday(40), start_time: '09:00' });
    const clientId = randomUUID();
    const { socket, welcome } = await helloSync(server, user.token, clientId);
    assert.equal(welcome.user_id, user.uuid);
    assert.equal(welcome.last_mutation_id, 0);
    assert.equal(welcome.window.from, daysFromToday(-30));
    assert.equal(welcome.window.to, daysFromToday(14));
    assert.equal((await socket.next('reset')).reason, 'first_sync');
    const feed = await nextFeed(socket);
    const ids = (table: string) => feed.changes.filter((c) => c.table === table).map((c) => c.id);
    assert.deepEqual(ids('patients'), [patient.uuid]);
    assert.deepEqual(ids('patient_referrals'), [patient.referral_uuid]);
    assert.deepEqual(ids('visits'), [inWindow], 'a visit outside the window is not in scope');
    assert.ok(!ids('visits').includes(tooFar));
    assert.deepEqual(ids('organization_config'), [user.uuid]);
    const patientRow = feed.changes.find((c) => c.table === 'patients');
    assert.ok(patientRow && patientRow.op === 'upsert');
    assert.equal(patientRow.row.first_name, 'Marguerite', 'PHI is opened for its owner');
    assert.equal(feed.synced.cursor, feed.checkpoint);
    socket.close();
  });

  test('resuming from a cursor sends only what changed since, live changes follow, deletes are tombstones', async () => {
    const user = await clinician();
    const patient = await createPatient(server, user);
    const visit = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today(), start_time: '10:00' });
    const clientId = randomUUID();
    const first = await helloSync(server, user.token, clientId);
    const initial = await nextFeed(first.socket);
    first.socket.close();

    const second = await helloSync(server, user.token, clientId, initial.checkpoint);
    const resumed = await nextFeed(second.socket);
    assert.deepEqual(resumed.changes, [], 'nothing changed: nothing re-sent');
    assert.ok(!second.socket.received.some((m) => m.type === 'reset'));

    // A REST write reaches the open socket.
    const res = await server.api('POST', '/visit-timer-events', {
      token: user.token,
      body: { schedule_uuid: visit, events: [timerEvent('start_travel', new Date().toISOString())] },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const live = await nextFeed(second.socket);
    const tables = live.changes.map((c) => c.table).sort();
    assert.ok(tables.includes('timer_events'), `got ${tables.join(',')}`);
    assert.ok(tables.includes('visits'));

    // A soft delete travels as a tombstone.
    await server.runtime.database.db.execute(sql`update patients set deleted_at = now() where id = ${patient.uuid}`);
    const tomb = await nextFeed(second.socket);
    assert.deepEqual(
      tomb.changes.filter((c) => c.table === 'patients').map((c) => [c.op, c.id]),
      [['delete', patient.uuid]],
    );
    second.socket.close();
  });

  test('mutations are applied once, in order, through the REST rules', async () => {
    const user = await clinician();
    const clientId = randomUUID();
    const { socket } = await helloSync(server, user.token, clientId);
    await nextFeed(socket);
    const patientId = randomUUID();
    const visitId = randomUUID();
    const now = new Date().toISOString();
    socket.send({ type: 'mutation', mutation_id: 1, name: 'patient.create', args: { uuid: patientId, first_name: 'Ada', last_name: 'Quince' }, client_time: now });
    socket.send({ type: 'mutation', mutation_id: 2, name: 'visit.schedule', args: { uuid: visitId, patient_uuid: patientId, visit_date: today(), start_time: '11:00' }, client_time: now });
    socket.send({ type: 'mutation', mutation_id: 3, name: 'visit.timer_events', args: { schedule_uuid: visitId, events: [timerEvent('start_travel', now)] }, client_time: now });
    // The same frame twice: processed once.
    socket.send({ type: 'mutation', mutation_id: 3, name: 'visit.timer_events', args: { schedule_uuid: visitId, events: [timerEvent('start_travel', now)] }, client_time: now });
    // Refused by the rules: complete cannot follow start_travel.
    socket.send({ type: 'mutation', mutation_id: 4, name: 'visit.timer_events', args: { schedule_uuid: visitId, events: [timerEvent('complete', now)] }, client_time: now });
    socket.send({ type: 'mutation', mutation_id: 5, name: 'visit.mileage', args: { uuid: visitId, mileage: { total_miles: 12.5, recorded_at: now } }, client_time: now });
    // Last writer wins by device time: an older entry is acknowledged, not applied.
    const older = new Date(Date.parse(now) - 60_000).toISOString();
    socket.send({ type: 'mutation', mutation_id: 6, name: 'visit.mileage', args: { uuid: visitId, mileage: { total_miles: 99, recorded_at: older } }, client_time: now });

    assert.deepEqual((await socket.next('ack', (m) => m.mutation_id === 1)).result, { uuid: patientId, referral_uuid: (await referralOf(patientId)) });
    assert.deepEqual((await socket.next('ack', (m) => m.mutation_id === 2)).result, { uuid: visitId });
    assert.equal(((await socket.next('ack', (m) => m.mutation_id === 3)).result as { recorded: number }).recorded, 1);
    assert.deepEqual((await socket.next('ack', (m) => m.mutation_id === 3)).result, { duplicate: true });
    const reject = await socket.next('reject', (m) => m.mutation_id === 4);
    assert.equal(reject.status, 422);
    assert.equal(reject.code, 'invalid_timer_sequence');
    assert.deepEqual((await socket.next('ack', (m) => m.mutation_id === 5)).result, { applied: true });
    assert.deepEqual((await socket.next('ack', (m) => m.mutation_id === 6)).result, { applied: false });
    const [miles] = await count(sql`select total_miles::float8 as n from visit_mileage where visit_id = ${visitId}`);
    assert.equal(miles, 12.5);

    const [events] = await count(sql`select count(*)::int as n from timer_events where visit_id = ${visitId}`);
    assert.equal(events, 1, 'the duplicated mutation was applied once; the rejected one not at all');
    // Each applied mutation is audited as a success; the rejected one as a failure, although
    // its savepoint was rolled back.
    const outcomes = await rows<{ request_id: string; outcome: string }>(
      sql`select request_id, outcome from audit_log where actor_user_id = ${user.uuid} and request_id like 'sync:%' order by id`,
    );
    assert.deepEqual(
      outcomes.map((o) => [o.request_id.split(':')[2], o.outcome]),
      [['1', 'success'], ['2', 'success'], ['3', 'success'], ['4', 'invalid'], ['5', 'success'], ['6', 'success']],
    );
    socket.close();

    // The server remembers what it processed: a reconnect says so, and replays are not applied.
    const again = await helloSync(server, user.token, clientId);
    assert.equal(again.welcome.last_mutation_id, 6);
    again.socket.send({ type: 'mutation', mutation_id: 2, name: 'visit.schedule', args: { uuid: randomUUID(), visit_date: today(), start_time: '12:00' }, client_time: now });
    assert.deepEqual((await again.socket.next('ack', (m) => m.mutation_id === 2)).result, { duplicate: true });
    // A refused one replayed (its reject was lost with the socket) is refused again, never acked.
    again.socket.send({ type: 'mutation', mutation_id: 4, name: 'visit.timer_events', args: { schedule_uuid: visitId, events: [timerEvent('complete', now)] }, client_time: now });
    const replayed = await again.socket.next('reject', (m) => m.mutation_id === 4);
    assert.deepEqual({ ...replayed }, { ...reject });
    const [visits] = await count(sql`select count(*)::int as n from visits where owner_id = ${user.uuid}`);
    assert.equal(visits, 1);
    again.socket.close();
  });

  test('a failure that is not the mutation\'s fault is retried, and nothing behind it overtakes it', async () => {
    const user = await clinician();
    const db = server.runtime.database.db;
    const flaky = randomUUID();
    // A fault on the database's side: the first insert of this patient fails (a sequence is
    // not rolled back with its transaction, so the second attempt passes).
    await db.execute(sql.raw(`create sequence fault_${flaky.replaceAll('-', '')}`));
    await db.execute(
      sql.raw(`create function fault_${flaky.replaceAll('-', '')}() returns trigger language plpgsql as $$
        begin
          if new.id = '${flaky}' and nextval('fault_${flaky.replaceAll('-', '')}') = 1 then raise exception 'injected fault'; end if;
          return new;
        end $$`),
    );
    await db.execute(sql.raw(`create trigger fault_${flaky.replaceAll('-', '')} before insert on patients for each row execute function fault_${flaky.replaceAll('-', '')}()`));
    const clientId = randomUUID();
    const { socket } = await helloSync(server, user.token, clientId);
    const now = new Date().toISOString();
    const create = (id: number, uuid: string) => ({ type: 'mutation', mutation_id: id, name: 'patient.create', args: { uuid, first_name: 'Flaky', last_name: `P${id}` }, client_time: now });
    const ids = [flaky, randomUUID(), randomUUID()];
    socket.send(create(1, ids[0] as string));
    const retry = await socket.next('retry', (m) => m.mutation_id === 1);
    assert.ok(retry.after_ms >= 0);
    // Frames already on the wire behind the failed one must not be applied before it.
    socket.send(create(2, ids[1] as string));
    await socket.next('retry', (m) => m.mutation_id === 2);
    // The device resends from the head of its outbox: everything lands once, in order.
    socket.send(create(1, ids[0] as string));
    socket.send(create(2, ids[1] as string));
    socket.send(create(3, ids[2] as string));
    await socket.next('ack', (m) => m.mutation_id === 3);
    assert.ok(!socket.received.some((m) => m.type === 'ack' && (m.result as { duplicate?: boolean } | null)?.duplicate));
    const [n] = await count(sql`select count(*)::int as n from patients where owner_id = ${user.uuid}`);
    assert.equal(n, 3);
    socket.close();
  });

  test('the HTTP fallback applies mutations on the same exactly-once counter as the socket', async () => {
    const user = await clinician();
    const clientId = randomUUID();
    const now = new Date().toISOString();
    const patientId = randomUUID();
    const body = {
      client_id: clientId,
      mutations: [
        { mutation_id: 1, name: 'patient.create', args: { uuid: patientId, first_name: 'Hal', last_name: 'Ward' }, client_time: now },
        { mutation_id: 2, name: 'visit.schedule', args: { patient_uuid: randomUUID(), visit_date: today(), start_time: '08:00' }, client_time: now },
      ],
    };
    const res = await server.api('POST', '/sync/mutations', { token: user.token, body });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.last_mutation_id, 2);
    assert.equal(res.body.data.results[0].type, 'ack');
    assert.equal(res.body.data.results[1].type, 'reject');
    assert.equal(res.body.data.results[1].code, 'unknown_patient');
    // Sent again (a lost response): answered as the first time, nothing applied twice.
    const again = await server.api('POST', '/sync/mutations', { token: user.token, body });
    assert.deepEqual(
      again.body.data.results.map((r: { type: string; result?: unknown; code?: string }) => [r.type, r.result ?? r.code]),
      [['ack', { duplicate: true }], ['reject', 'unknown_patient']],
    );
    // The socket of the same device continues from there.
    const { welcome, socket } = await helloSync(server, user.token, clientId);
    assert.equal(welcome.last_mutation_id, 2);
    socket.close();
    const [patients] = await count(sql`select count(*)::int as n from patients where owner_id = ${user.uuid}`);
    assert.equal(patients, 1);

    assert.equal((await server.api('POST', '/sync/mutations', { body })).status, 401);
    const bad = await server.api('POST', '/sync/mutations', { token: user.token, body: { client_id: clientId, mutations: [] } });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.code, 'validation_failed');
  });

  test('an invalid mutation is rejected in the contract error terms and counts as processed', async () => {
    const user = await clinician();
    const clientId = randomUUID();
    const { socket } = await helloSync(server, user.token, clientId);
    socket.send({ type: 'mutation', mutation_id: 7, name: 'patient.create', args: { last_name: 'NoFirst' }, client_time: new Date().toISOString() });
    const reject = await socket.next('reject');
    assert.equal(reject.status, 422);
    assert.equal(reject.code, 'validation_failed');
    assert.ok(reject.errors?.first_name);
    assert.ok(!JSON.stringify(reject).includes('NoFirst'), 'no PHI echoed');
    socket.close();
    assert.equal((await helloSync(server, user.token, clientId)).welcome.last_mutation_id, 7);
  });

  test('close codes: bad frames, hello not first, unknown protocol, bad token', async () => {
    const user = await clinician();
    const garbage = await openSync(server);
    garbage.sendRaw('not json');
    assert.equal((await garbage.closed).code, CLOSE_CODES.bad_message);

    const early = await openSync(server);
    early.send({ type: 'auth', token: user.token });
    assert.equal((await early.closed).code, CLOSE_CODES.bad_message);

    const future = await openSync(server);
    future.send({ type: 'hello', protocol: 99, token: user.token, client_id: randomUUID(), cursor: null });
    const refused = await future.closed;
    assert.equal(refused.code, CLOSE_CODES.protocol_unsupported);
    // The reason names what this server speaks, for a newer app to step down to.
    assert.deepEqual(protocolsNamedIn(refused.reason), [...SUPPORTED_PROTOCOLS]);

    // A second hello right behind the first (before welcome): refused, never a swapped identity.
    const other = await clinician();
    const twice = await openSync(server);
    twice.send({ type: 'hello', protocol: 1, token: user.token, client_id: randomUUID(), cursor: null });
    twice.send({ type: 'hello', protocol: 1, token: other.token, client_id: randomUUID(), cursor: null });
    assert.equal((await twice.closed).code, CLOSE_CODES.bad_message);
    assert.ok(!twice.received.some((m) => m.type === 'welcome' && m.user_id === other.uuid));

    // Frames pipelined behind hello wait for it instead of being refused.
    const eager = await openSync(server);
    eager.send({ type: 'hello', protocol: 1, token: user.token, client_id: randomUUID(), cursor: null });
    eager.send({ type: 'mutation', mutation_id: 1, name: 'patient.create', args: { first_name: 'Eager', last_name: 'Frame' }, client_time: new Date().toISOString() });
    await eager.next('ack', (m) => m.mutation_id === 1);
    eager.close();

    const forged = await openSync(server);
    forged.send({ type: 'hello', protocol: 1, token: `${user.token}x`, client_id: randomUUID(), cursor: null });
    assert.equal((await forged.closed).code, CLOSE_CODES.unauthorized);
  });

  test('in-band refresh keeps the socket; logout closes it with 4401, disable with 4403', async () => {
    const user = await clinician();
    const { socket } = await helloSync(server, user.token, randomUUID());
    const refreshed = await server.api('POST', '/token/refresh', { body: { refresh_token: user.refreshToken } });
    assert.equal(refreshed.status, 200, JSON.stringify(refreshed.body));
    const token = refreshed.body.data.token as string;
    socket.send({ type: 'auth', token });
    await socket.next('auth_ok');

    const logout = await server.api('POST', '/logout', { token });
    assert.equal(logout.status, 200, JSON.stringify(logout.body));
    assert.equal((await socket.closed).code, CLOSE_CODES.unauthorized);

    const other = await clinician();
    const s2 = await helloSync(server, other.token, randomUUID());
    await server.runtime.database.db.execute(sql`update users set disabled_at = now() where id = ${other.uuid}`);
    assert.equal((await s2.socket.closed).code, CLOSE_CODES.account_disabled);
  });

  test('an account disabled by the operator: hello closes with 4403 and refresh answers 401 account_disabled; enabled again, those are plain invalid tokens', async () => {
    const user = await clinician();
    await server.runtime.services.users.setDisabled(user.uuid, true);
    const refused = await openSync(server);
    refused.send({ type: 'hello', protocol: 1, token: user.token, client_id: randomUUID(), cursor: null });
    assert.equal((await refused.closed).code, CLOSE_CODES.account_disabled);
    const refresh = await server.api('POST', '/token/refresh', { body: { refresh_token: user.refreshToken } });
    assert.equal(refresh.status, 401);
    assert.equal(refresh.body.code, 'account_disabled');
    assert.equal((await server.api('GET', '/my-profile', { token: user.token })).body.code, 'account_disabled');

    await server.runtime.services.users.setDisabled(user.uuid, false);
    const again = await server.api('POST', '/token/refresh', { body: { refresh_token: user.refreshToken } });
    assert.equal(again.status, 401);
    assert.equal(again.body.code, 'invalid_token', 'the session stays ended: sign in again');
  });

  test('a socket that never says hello is closed after 10 s (4408)', async () => {
    const silent = await openSync(server);
    const started = Date.now();
    assert.equal((await silent.closed).code, CLOSE_CODES.auth_timeout);
    assert.ok(Date.now() - started >= 9_000);
  });

  test('the same device connecting again supersedes its old socket (4409)', async () => {
    const user = await clinician();
    const clientId = randomUUID();
    const first = await helloSync(server, user.token, clientId);
    const second = await helloSync(server, user.token, clientId);
    assert.equal((await first.socket.closed).code, CLOSE_CODES.superseded);
    second.socket.close();
  });

  async function referralOf(patientId: string): Promise<string> {
    const rows = await count(sql`select id::text as n from patient_referrals where patient_id = ${patientId}`);
    return rows[0] as unknown as string;
  }

  async function rows<T>(query: ReturnType<typeof sql>): Promise<T[]> {
    const result = await server.runtime.database.db.execute(query);
    return (Array.isArray(result) ? result : (result as { rows: T[] }).rows) as T[];
  }

  async function count(query: ReturnType<typeof sql>): Promise<number[]> {
    const result = await server.runtime.database.db.execute(query);
    const rows = (Array.isArray(result) ? result : (result as { rows: Array<{ n: number }> }).rows) as Array<{ n: number }>;
    return rows.map((r) => r.n);
  }
});
