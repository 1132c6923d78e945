/**
 * A refusal whose reject frame is lost with the socket: on reconnect the server says it has
 * processed the mutation, the device sends it again, and the server answers the same reject —
 * the write is surfaced as refused, not taken for accepted and silently dropped (found by the
 * model test).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { WebSocket } from 'ws';
import { createFieldchartClient } from '@fieldchart/client';
import { forEachBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { createPatient } from '../server/visits/visit-fixtures.ts';
import { emptyDeviceImage } from '../helpers/empty-device-image.ts';

/** A network that drops the connection as the first reject frame arrives. */
let dropped = 0;
class LosesFirstReject extends WebSocket {
  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'message' && dropped === 0 && String(args[0]).includes('"type":"reject"')) {
      dropped++;
      this.terminate();
      return false;
    }
    return super.emit(event, ...args);
  }
}

forEachBackend('offline client: a lost reject', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('the replayed mutation is refused again and surfaced', async () => {
    dropped = 0;
    const user = await registerUser(server);
    const other = await registerUser(server);
    const taken = await createPatient(server, other);
    const client = await createFieldchartClient({
      baseUrl: server.url,
      dataDir: 'memory://',
      pglite: { loadDataDir: await emptyDeviceImage() },
      WebSocket: LosesFirstReject as unknown as NonNullable<Parameters<typeof createFieldchartClient>[0]['WebSocket']>,
      backoff: { initialMs: 40, maxMs: 200 },
    });
    try {
      await client.signIn({ email: user.email, password: user.password });
      await client.sync.whenSynced({ timeoutMs: 30_000 });
      await client.patients.create({ uuid: taken.uuid, first_name: 'Dup', last_name: 'Licate' });
      await eventually(async () => assert.equal((await client.rejections.list()).length, 1), { timeoutMs: 30_000 });
      assert.equal(dropped, 1, 'the first reject was lost');
      const [rejection] = await client.rejections.list();
      assert.equal(rejection?.code, 'id_taken');
      assert.equal(client.sync.status.pending, 0);
      assert.deepEqual(await client.patients.list(), []);
    } finally {
      await client.close();
    }
  });
});
