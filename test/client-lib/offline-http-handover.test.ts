/**
 * The outbox went over HTTP (websockets were blocked) and its `POST /sync/mutations` hangs on
 * the network when websockets come back: the socket carries the outbox once the hung exchange's
 * grace (LET_GO_GRACE_MS) is over. Before, the uploader waited for that exchange to time out
 * (the REST client's timeout, 30 s by default) before the socket sent anything, since one send
 * runs at a time.
 *
 * And an exchange that is only slow, answered within the grace after the socket's first feed
 * run: the device is synced once it is answered, also when its write changed no row on the
 * server (found by the offline model: the device waited for ever for a `synced` covering it).
 * And one that fails: the status says nothing is uploading while the device waits to try again
 * (it said `uploading` until something else changed it).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FieldchartClient } from '../../client-lib/src/index.ts';
import { forEachBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { API, registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { createPatient, details, scheduleVisit, utcClinician } from '../server/visits/visit-fixtures.ts';
import { createFieldchartClient } from '@fieldchart/client';
import { emptyDeviceImage } from '../helpers/empty-device-image.ts';
import { LET_GO_GRACE_MS } from '../../client-lib/src/sync/uploader.ts';
import { ev, tempDataDir } from './support.ts';

const WRITES = 5;
/** The REST client's timeout (its default): what the socket waited for before. */
const REST_TIMEOUT_MS = 30_000;
/** The grace, and time for a loaded machine's upload. */
const HANDOVER_MS = LET_GO_GRACE_MS + (REST_TIMEOUT_MS - LET_GO_GRACE_MS) / 2;

const isMutationsPost = (chunk: Buffer) => {
  const head = chunk.subarray(0, 200).toString('latin1');
  return head.startsWith('POST ') && head.includes('/sync/mutations');
};

forEachBackend('offline client: a hung HTTP upload does not hold the socket that replaces it', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  /**
   * A signed-in, synced device with two paths out, as a network with a proxy that sometimes
   * strips upgrades has: HTTP, and the websocket, each through a proxy of its own.
   */
  async function twoPathClient(user: { email: string; password: string }): Promise<{ client: FieldchartClient; http: TcpProxy; ws: TcpProxy }> {
    const http = await startTcpProxy(server.url);
    const ws = await startTcpProxy(server.url);
    let client: FieldchartClient | null = null;
    after(async () => {
      await client?.close().catch(() => undefined);
      await http.close();
      await ws.close();
    });
    client = await createFieldchartClient({
      baseUrl: http.url,
      syncUrl: `${ws.url.replace(/^http/, 'ws')}${API}/sync`,
      dataDir: tempDataDir(),
      pglite: { loadDataDir: await emptyDeviceImage() },
      backoff: { initialMs: 40, maxMs: 200 },
    });
    await client.signIn({ email: user.email, password: user.password });
    await client.sync.whenSynced({ timeoutMs: 30_000 });
    return { client, http, ws };
  }

  test('websockets come back while POST /sync/mutations hangs: the socket takes the outbox after the grace, every write once', async (t) => {
    const user = await registerUser(server);
    const { client, http, ws } = await twoPathClient(user);

    // Websockets blocked: the device queues writes and takes up HTTP, whose upload hangs.
    http.stall(isMutationsPost);
    ws.cut();
    await eventually(() => assert.equal(client.sync.status.connected, false, 'the socket is gone'), { timeoutMs: 30_000 });
    const uuids: string[] = [];
    for (let i = 0; i < WRITES; i++) uuids.push((await client.patients.create({ first_name: `Handover${i}`, last_name: 'Test' })).uuid);
    await eventually(() => assert.ok(http.stalled > 0, 'an upload over HTTP is on its way'), { timeoutMs: 30_000 });

    // Websockets pass again; the HTTP exchange still hangs.
    const back = Date.now();
    ws.restore();
    await client.sync.whenSynced({ timeoutMs: 2 * REST_TIMEOUT_MS });
    const tookMs = Date.now() - back;
    t.diagnostic(`the socket's upload done ${tookMs} ms after websockets came back (the HTTP exchange still hanging)`);
    assert.ok(tookMs < HANDOVER_MS, `the socket waited ${tookMs} ms for the hung HTTP exchange`);

    assert.equal(client.sync.status.pending, 0);
    assert.deepEqual(await client.rejections.list(), []);
    const mine = await server.api('GET', '/patient/my-patients?per_page=100', { token: user.token });
    const names = (mine.body.data as Array<{ uuid: string; first_name: string }>).filter((p) => uuids.includes(p.uuid)).map((p) => p.first_name);
    assert.deepEqual(names.sort(), Array.from({ length: WRITES }, (_, i) => `Handover${i}`).sort(), 'every write once');
    http.stall(null);
  });
  test('a slow POST /sync/mutations answered after the socket’s first run, for a write the server already held: synced all the same', async (t) => {
    const user = await utcClinician(server);
    const { uuid: patient } = await createPatient(server, user);
    const day = new Date().toISOString().slice(0, 10);
    const visit = await scheduleVisit(server, user, { patient_uuid: patient, visit_date: day, start_time: '09:00' });
    const { client: c, http, ws } = await twoPathClient(user);

    // Websockets blocked; another device of the clinician records start_travel meanwhile, and
    // this one records the same event: on the server it is already there, no row changes.
    ws.cut();
    await eventually(() => assert.equal(c.sync.status.connected, false, 'the socket is gone'), { timeoutMs: 30_000 });
    const start = ev('start_travel', `${day}T08:30:00.000Z`);
    const other = await server.api('POST', '/visit-timer-events', { token: user.token, body: { schedule_uuid: visit, events: [start] } });
    assert.equal(other.status, 200, JSON.stringify(other.body));
    http.delay(isMutationsPost);
    await c.visits.recordTimerEvents(visit, [start]);
    await eventually(() => assert.ok(http.stalled > 0, 'the upload over HTTP is on its way'), { timeoutMs: 30_000 });

    // The socket is welcomed and its first run ends; then the request reaches the server.
    ws.restore();
    await eventually(() => assert.ok(c.sync.status.connected && c.sync.status.current, 'welcomed, its first run done'), { timeoutMs: 30_000, intervalMs: 10 });
    const released = Date.now();
    http.release();
    await c.sync.whenSynced({ timeoutMs: LET_GO_GRACE_MS * 3 });
    t.diagnostic(`synced ${Date.now() - released} ms after the request went on`);
    assert.equal(c.sync.status.pending, 0);
    assert.deepEqual(await c.rejections.list(), []);
    const local = await c.visits.get(visit);
    const remote = (await details(server, user, visit)) as { timer_events: unknown[]; updated_at: string };
    assert.equal(local?.timer_events.length, 1, 'one start_travel');
    assert.equal(remote.timer_events.length, 1);
    assert.equal(new Date(local?.updated_at ?? 0).toISOString(), new Date(remote.updated_at).toISOString(), 'the device reads the server’s row');
  });
  test('a failed upload over HTTP leaves nothing in flight: the status stops saying uploading while the device waits to try again', async () => {
    const user = await registerUser(server);
    const { client, http, ws } = await twoPathClient(user);
    ws.cut();
    await eventually(() => assert.equal(client.sync.status.connected, false, 'the socket is gone'), { timeoutMs: 30_000 });
    http.cut();
    const failures: boolean[] = [];
    let last = client.sync.status.lastError;
    const off = client.sync.on('status', (s) => {
      if (s.lastError !== last && s.lastError?.code === 'upload') failures.push(s.uploading);
      last = s.lastError;
    });
    await client.patients.create({ first_name: 'Wait', last_name: 'Ing' });
    await eventually(() => assert.ok(failures.length >= 3, 'three sends failed'), { timeoutMs: 30_000 });
    off();
    assert.deepEqual(failures, failures.map(() => false), 'each failure is shown with nothing uploading');
    http.restore();
    ws.restore();
    await client.sync.whenSynced({ timeoutMs: 30_000 });
  });
});
