/**
 * The outbox went over HTTP (websockets were blocked) and its `POST /sync/mutations` hangs on
 * the network when websockets come back: the socket carries the outbox once the hung exchange's
 * grace (LET_GO_GRACE_MS) is over. Before, the uploader waited for that exchange to time out
 * (the REST client's timeout, 30 s by default) before the socket sent anything, since one send
 * runs at a time.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { FieldchartClient } from '../../client-lib/src/index.ts';
import { forEachBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { API, registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { createFieldchartClient } from '@fieldchart/client';
import { emptyDeviceImage } from '../helpers/empty-device-image.ts';
import { LET_GO_GRACE_MS } from '../../client-lib/src/sync/uploader.ts';
import { tempDataDir } from './support.ts';

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

  test('websockets come back while POST /sync/mutations hangs: the socket takes the outbox after the grace, every write once', async (t) => {
    const user = await registerUser(server);
    // Two paths out, as a network with a proxy that sometimes strips upgrades has: HTTP, and
    // the websocket, each through a proxy of its own.
    const http: TcpProxy = await startTcpProxy(server.url);
    const ws: TcpProxy = await startTcpProxy(server.url);
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

    // Websockets blocked: the device queues writes and takes up HTTP, whose upload hangs.
    http.stall(isMutationsPost);
    ws.cut();
    await eventually(() => assert.equal(client?.sync.status.connected, false, 'the socket is gone'), { timeoutMs: 30_000 });
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
});
