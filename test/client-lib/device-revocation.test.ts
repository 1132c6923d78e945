/**
 * A device the server no longer allows wipes itself, against the real server and the real
 * client library: revoked by the operator command (`device.revoke`, what `fieldchart device
 * revoke` runs) while offline with a queued write, or while connected, or while draining its
 * outbox over HTTP; and a device whose user left the organization whose data it holds. Each
 * ends with no canary on the device, the old key gone, and the queued writes never applied;
 * the user's other devices go on. Revoking a device also ends the sessions it used: its
 * tokens are refused on the REST API (401 `device_revoked`) and cannot be refreshed, so a
 * device offline when it was revoked learns it from its refresh and wipes itself too.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { createFieldchartClient } from '@fieldchart/client';
import { CLOSE_CODES } from '@fieldchart/schema/sync';
import { operationContext, runOperation } from '@fieldchart/server';
import { KEY_FILE } from '../../client-lib/src/platform/device-key-node.ts';
import { forEachBackend } from '../helpers/backends.ts';
import { manualClock } from '../helpers/clock.ts';
import { eventually } from '../helpers/eventually.ts';
import { helloSync, nextFeed, openSync, type SyncSocket } from '../helpers/sync-socket.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { API, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { createPatient, scheduleVisit, utcClinician, type User } from '../server/visits/visit-fixtures.ts';
import { findBytes, findTexts } from './device-bytes.ts';
import { openClient, tempDataDir } from './support.ts';
import { emptyDeviceImage } from '../helpers/empty-device-image.ts';

const WAIT = { timeoutMs: 30_000 };

interface Device {
  client_id: string;
  revoked_at: string | null;
}

forEachBackend('revoked devices wipe themselves', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  const operation = (name: string, args: Record<string, unknown>) => runOperation(operationContext(server.runtime.services, server.runtime.database), name, args);
  const devicesOf = async (user: User) => ((await operation('device.list', { user: user.email })) as { items: Device[] }).items;
  const helloWith = async (token: string, clientId: string) => {
    const socket = await openSync(server);
    socket.send({ type: 'hello', protocol: 2, token, client_id: clientId, cursor: null });
    return socket;
  };
  const tagOf = () => randomUUID().replaceAll('-', '').slice(0, 10);
  const phoneOnServer = async (user: User, patientId: string) => {
    const signIn = await server.api('POST', '/sign-in', { body: { email: user.email, password: user.password } });
    assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
    const mine = await server.api('GET', '/patient/my-patients?per_page=50', { token: signIn.body.data.token as string });
    return (mine.body.data as { uuid: string; phone: string | null }[]).find((p) => p.uuid === patientId)?.phone;
  };

  test('revoked while offline with a queued write, and while connected: each wipes itself, nothing queued is applied, the other device goes on until its turn', async () => {
    const user = await utcClinician(server);
    const tag = tagOf();
    const canary = { first: `Revokaby${tag}`, phone: `+1 312 555 ${tag.slice(0, 4)}r${tag.slice(4)}`, pendingPhone: `+1 773 555 ${tag.slice(0, 4)}q${tag.slice(4)}` };
    const proxy = await startTcpProxy(server.url);
    const dir = tempDataDir();
    const lost = await openClient(proxy.url, dir);
    const other = await openClient(server.url);
    try {
      await lost.signIn({ email: user.email, password: user.password });
      const patient = await lost.patients.create({ first_name: canary.first, last_name: 'Canary', phone: canary.phone });
      await lost.sync.whenSynced(WAIT);
      await other.signIn({ email: user.email, password: user.password });
      await other.sync.whenSynced(WAIT);
      const oldKey = fs.readFileSync(path.join(dir, KEY_FILE));
      const [lostId, otherId] = (await devicesOf(user)).map((d) => d.client_id);
      assert.ok(lostId && otherId && lostId !== otherId, 'both devices are listed, first seen first');

      // The lost phone is offline with a write queued when the operator revokes it.
      proxy.cut();
      await eventually(() => assert.equal(lost.sync.status.connected, false), WAIT);
      await lost.patients.update(patient.uuid, { phone: canary.pendingPhone });
      assert.equal(lost.sync.status.pending, 1);
      const revoked = (await operation('device.revoke', { client_id: lostId, user: user.email })) as { revoked: Device[] };
      assert.deepEqual(revoked.revoked.map((d) => d.client_id), [lostId]);
      assert.ok(revoked.revoked[0]?.revoked_at);

      proxy.restore();
      await eventually(() => assert.equal(lost.sync.status.halted, 'device_revoked'), WAIT);
      assert.equal(lost.sync.status.lastError?.code, 'device_revoked');
      await eventually(async () => {
        assert.deepEqual(await lost.patients.list(), []);
        assert.equal(lost.sync.status.pending, 0);
      }, WAIT);
      assert.equal(lost.sync.status.signedIn, false);
      await lost.close();
      assert.deepEqual(findTexts(dir, Object.values(canary)), [], 'no canary left on the device');
      assert.deepEqual(findBytes(dir, oldKey), [], 'the old key is nowhere');
      assert.equal(await phoneOnServer(user, patient.uuid), canary.phone, 'the queued write never reached the server');

      // The user's other device was not touched, and still syncs.
      assert.equal(other.sync.status.halted, null);
      await other.patients.update(patient.uuid, { phone: canary.pendingPhone });
      await other.sync.whenSynced(WAIT);
      assert.equal(await phoneOnServer(user, patient.uuid), canary.pendingPhone);
      assert.equal(other.sync.status.connected, true);

      // Revoked while connected: its socket closes at once and it wipes.
      await operation('device.revoke', { client_id: otherId });
      await eventually(() => assert.equal(other.sync.status.halted, 'device_revoked'), WAIT);
      await eventually(async () => assert.deepEqual(await other.patients.list(), []), WAIT);
      assert.deepEqual(
        (await devicesOf(user)).map((d) => d.revoked_at !== null),
        [true, true],
      );
    } finally {
      await lost.close().catch(() => {});
      await other.close().catch(() => {});
      await proxy.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('over HTTP (websockets blocked) a revoked device is refused with 403 device_revoked, applies nothing and wipes itself', async () => {
    const user = await utcClinician(server);
    const blocked = `${server.url.replace(/^http/, 'ws')}${API}/no-websockets-here`;
    const dir = tempDataDir();
    const open = async (syncUrl?: string) => createFieldchartClient({ baseUrl: server.url, dataDir: dir, pglite: { loadDataDir: await emptyDeviceImage() }, backoff: { initialMs: 40, maxMs: 200 }, ...(syncUrl ? { syncUrl } : {}) });
    // First on a good network (the device learns whose it is), then only HTTP passes.
    const setUp = await open();
    await setUp.signIn({ email: user.email, password: user.password });
    await setUp.sync.whenSynced(WAIT);
    await setUp.close();
    const client = await open(blocked);
    try {
      const first = randomUUID();
      await client.patients.create({ uuid: first, first_name: 'Http', last_name: 'First' });
      await eventually(() => assert.equal(client.sync.status.pending, 0), WAIT);
      const [device] = await devicesOf(user);
      assert.ok(device);
      await operation('device.revoke', { client_id: device.client_id });

      // The refusal in the contract's error shape.
      const direct = await server.api('POST', '/sync/mutations', {
        token: user.token,
        body: { client_id: device.client_id, mutations: [{ mutation_id: 99, name: 'patient.create', args: { uuid: randomUUID(), first_name: 'Never', last_name: 'Applied' }, client_time: new Date().toISOString() }] },
      });
      assert.equal(direct.status, 403, JSON.stringify(direct.body));
      assert.deepEqual(direct.body, { status: false, message: 'This device was revoked', code: 'device_revoked' });

      const second = randomUUID();
      await client.patients.create({ uuid: second, first_name: 'Http', last_name: 'Second' });
      await eventually(() => assert.equal(client.sync.status.halted, 'device_revoked'), WAIT);
      await eventually(async () => assert.deepEqual(await client.patients.list(), []), WAIT);
      const mine = await server.api('GET', '/patient/my-patients?per_page=50', { token: user.token });
      assert.deepEqual((mine.body.data as { uuid: string }[]).map((p) => p.uuid), [first]);
      assert.equal(client.sync.status.connected, false, 'never connected by websocket');
    } finally {
      await client.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  /** The close code, or a failure within 10 s rather than a hung test. */
  const closeCode = async (socket: SyncSocket) => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('the socket was not closed within 10 s')), 10_000)));
    try {
      return (await Promise.race([socket.closed, late])).code;
    } finally {
      clearTimeout(timer);
    }
  };
  const REVOKED_BODY = { status: false, message: 'This device was revoked', code: 'device_revoked' };

  test('revoking a device ends the sessions it used: REST answers its token 401 device_revoked and refuses its refresh; the user’s other devices and sessions go on', async () => {
    const user = await utcClinician(server);
    const signIn = async () => {
      const res = await server.api('POST', '/sign-in', { body: { email: user.email, password: user.password } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.data as { token: string; refresh_token: string };
    };
    const profile = (token: string) => server.api('GET', '/my-profile', { token });
    const refresh = (refreshToken: string) => server.api('POST', '/token/refresh', { body: { refresh_token: refreshToken } });
    // One session per device, as the client library signs in.
    const [lostPair, keptPair, httpPair] = [await signIn(), await signIn(), await signIn()];
    const [lostId, keptId, httpId] = [randomUUID(), randomUUID(), randomUUID()];
    const lost = await helloSync(server, lostPair.token, lostId);
    await nextFeed(lost.socket);
    const kept = await helloSync(server, keptPair.token, keptId);
    await nextFeed(kept.socket);
    // A device that never opened a socket: known only by its mutations over HTTP.
    const overHttp = await server.api('POST', '/sync/mutations', {
      token: httpPair.token,
      body: { client_id: httpId, mutations: [{ mutation_id: 1, name: 'patient.create', args: { uuid: randomUUID(), first_name: 'Http', last_name: 'Only' }, client_time: new Date().toISOString() }] },
    });
    assert.equal(overHttp.status, 200, JSON.stringify(overHttp.body));
    assert.equal((await profile(lostPair.token)).status, 200);

    await operation('device.revoke', { client_id: lostId, user: user.email });
    assert.equal(await closeCode(lost.socket), CLOSE_CODES.device_revoked);
    const refused = await profile(lostPair.token);
    assert.equal(refused.status, 401, JSON.stringify(refused.body));
    assert.deepEqual(refused.body, REVOKED_BODY);
    const noRefresh = await refresh(lostPair.refresh_token);
    assert.equal(noRefresh.status, 401, JSON.stringify(noRefresh.body));
    assert.deepEqual(noRefresh.body, REVOKED_BODY);
    // Its token at hello: the device is told to wipe (4411), not to sign in again.
    assert.equal(await closeCode(await helloWith(lostPair.token, lostId)), CLOSE_CODES.device_revoked);

    // The user's other device: its socket stays open, its token works, and it refreshes.
    assert.equal(kept.socket.ws.readyState, kept.socket.ws.OPEN);
    assert.equal((await profile(keptPair.token)).status, 200);
    const renewed = await refresh(keptPair.refresh_token);
    assert.equal(renewed.status, 200, JSON.stringify(renewed.body));
    assert.equal((await profile((renewed.body.data as { token: string }).token)).status, 200);
    assert.equal((await profile(user.token)).status, 200, 'a session no device used is untouched');

    // The same install signed in again: refused at hello, and the new session ends with it.
    const again = await signIn();
    assert.equal(await closeCode(await helloWith(again.token, lostId)), CLOSE_CODES.device_revoked);
    assert.deepEqual((await profile(again.token)).body, REVOKED_BODY);

    // The HTTP-only device's session ends with it as well; the other device still goes on.
    await operation('device.revoke', { client_id: httpId });
    assert.deepEqual((await profile(httpPair.token)).body, REVOKED_BODY);
    assert.equal((await profile((renewed.body.data as { token: string }).token)).status, 200);
    assert.equal(kept.socket.ws.readyState, kept.socket.ws.OPEN);
    kept.socket.close();
  });

  // Revoked, or its account disabled by the operator: either ends the device's sessions, and a
  // device that was offline meanwhile hears it first from its refresh.
  const endings = {
    'revoked': { operation: 'device.revoke', args: (device: Device, _email: string) => ({ client_id: device.client_id }), halted: 'device_revoked' },
    'disabled with its account': { operation: 'user.disable', args: (_device: Device, email: string) => ({ user: email }), halted: 'account_disabled' },
  } as const;
  for (const [how, ending] of Object.entries(endings)) test(`a device offline when it was ${how}, whose access token expired meanwhile, has its refresh refused and wipes itself`, async () => {
    // The server's clock moves past the access token's life (1 h) without the test waiting.
    const clock = manualClock();
    const timed = await startTestServer(backend, { clock });
    const user = await utcClinician(timed);
    const tag = tagOf();
    const canary = { first: `Expiraby${tag}`, phone: `+1 312 555 ${tag.slice(0, 4)}x${tag.slice(4)}`, pendingPhone: `+1 773 555 ${tag.slice(0, 4)}y${tag.slice(4)}` };
    const proxy = await startTcpProxy(timed.url);
    const dir = tempDataDir();
    const client = await openClient(proxy.url, dir);
    try {
      await client.signIn({ email: user.email, password: user.password });
      const patient = await client.patients.create({ first_name: canary.first, last_name: 'Canary', phone: canary.phone });
      await client.sync.whenSynced(WAIT);
      const oldKey = fs.readFileSync(path.join(dir, KEY_FILE));
      const [device] = ((await runOperation(operationContext(timed.runtime.services, timed.runtime.database), 'device.list', { user: user.email })) as { items: Device[] }).items;
      assert.ok(device);

      proxy.cut();
      await eventually(() => assert.equal(client.sync.status.connected, false), WAIT);
      await client.patients.update(patient.uuid, { phone: canary.pendingPhone });
      await runOperation(operationContext(timed.runtime.services, timed.runtime.database), ending.operation, ending.args(device, user.email));
      clock.advance(2 * 3600);

      proxy.restore();
      await eventually(() => assert.equal(client.sync.status.halted, ending.halted), WAIT);
      assert.equal(client.sync.status.lastError?.code, ending.halted);
      await eventually(async () => {
        assert.deepEqual(await client.patients.list(), []);
        assert.equal(client.sync.status.pending, 0);
      }, WAIT);
      assert.equal(client.sync.status.signedIn, false);
      await client.close();
      assert.deepEqual(findTexts(dir, Object.values(canary)), [], 'no canary left on the device');
      assert.deepEqual(findBytes(dir, oldKey), [], 'the old key is nowhere');
      if (ending.operation === 'user.disable') await timed.runtime.services.users.setDisabled(user.uuid, false);
      const signIn = await timed.api('POST', '/sign-in', { body: { email: user.email, password: user.password } });
      const mine = await timed.api('GET', '/patient/my-patients?per_page=50', { token: signIn.body.data.token as string });
      assert.equal((mine.body.data as { uuid: string; phone: string | null }[]).find((p) => p.uuid === patient.uuid)?.phone, canary.phone, 'the queued write never reached the server');
    } finally {
      await client.close().catch(() => {});
      await proxy.close();
      await timed.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('removed from the organization: the device wipes that organization’s data on its next connection, queued writes included, and syncs on with what is still its own', async () => {
    const user = await utcClinician(server);
    const own = await createPatient(server, user, { first_name: 'Own', last_name: 'Patient' });
    const today = new Date().toISOString().slice(0, 10);
    const ownVisit = await scheduleVisit(server, user, { patient_uuid: own.uuid, visit_date: today, start_time: '08:00' });
    const orgId = randomUUID();
    const db = server.runtime.database.db;
    await db.execute(sql`insert into organizations (id, name, type, status) values (${orgId}, ${`Lakeside ${orgId}`}, 'home_health_agency', 'active')`);
    await db.execute(sql`insert into organization_members (organization_id, user_id, role) values (${orgId}, ${user.uuid}, 'member')`);
    const tag = tagOf();
    const canary = { first: `Agencyby${tag}`, phone: `+1 312 555 ${tag.slice(0, 4)}o${tag.slice(4)}`, pendingPhone: `+1 773 555 ${tag.slice(0, 4)}p${tag.slice(4)}` };
    const proxy = await startTcpProxy(server.url);
    const dir = tempDataDir();
    const client = await openClient(proxy.url, dir);
    try {
      await client.signIn({ email: user.email, password: user.password });
      const agency = await client.patients.create({ first_name: canary.first, last_name: 'Canary', phone: canary.phone });
      const agencyVisit = await client.visits.schedule({ patient_uuid: agency.uuid, visit_date: today, start_time: '10:00' });
      await client.sync.whenSynced(WAIT);
      assert.deepEqual((await client.patients.list()).map((p) => p.uuid).sort(), [own.uuid, agency.uuid].sort());
      const oldKey = fs.readFileSync(path.join(dir, KEY_FILE));

      proxy.cut();
      await eventually(() => assert.equal(client.sync.status.connected, false), WAIT);
      await client.patients.update(agency.uuid, { phone: canary.pendingPhone });
      await db.execute(sql`delete from organization_members where user_id = ${user.uuid}`);

      proxy.restore();
      await eventually(async () => {
        assert.equal(client.sync.status.connected, true);
        assert.deepEqual((await client.patients.list()).map((p) => p.uuid), [own.uuid]);
      }, WAIT);
      await eventually(async () => {
        assert.equal((await client.visits.get(agencyVisit.uuid)) ?? null, null, 'the organization’s visit is gone');
        assert.equal((await client.visits.get(ownVisit))?.uuid, ownVisit, 'the clinician’s own visit is back');
      }, WAIT);
      await client.sync.whenSynced(WAIT);
      assert.equal(client.sync.status.signedIn, true, 'the session stays');
      assert.equal(client.sync.status.pending, 0);
      await client.close();
      assert.deepEqual(findTexts(dir, Object.values(canary)), [], 'none of the organization’s data is left');
      assert.deepEqual(findBytes(dir, oldKey), [], 'the old key is nowhere');
      assert.equal(await phoneOnServer(user, agency.uuid), canary.phone, 'the queued write never reached the server');
    } finally {
      await client.close().catch(() => {});
      await proxy.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
