/**
 * Another clinician signs in on a device that still holds the first one's unsynced writes,
 * through a session started from tokens (which names no user until the server says whose it
 * is): the writes are never uploaded as the second clinician — sync stops and says why.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createFieldchartClient } from '@fieldchart/client';
import { forEachBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { emptyDeviceImage } from '../helpers/empty-device-image.ts';

forEachBackend('offline client: another user on the device', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test("the first user's queued writes are not uploaded as the second user", async () => {
    const first = await registerUser(server);
    const second = await registerUser(server);
    const proxy = await startTcpProxy(server.url);
    const client = await createFieldchartClient({ baseUrl: proxy.url, dataDir: 'memory://', pglite: { loadDataDir: await emptyDeviceImage() }, backoff: { initialMs: 40, maxMs: 200 } });
    try {
      await client.signIn({ email: first.email, password: first.password });
      await client.sync.whenSynced({ timeoutMs: 30_000 });
      proxy.cut();
      await eventually(() => assert.equal(client.sync.status.connected, false), { timeoutMs: 20_000 });
      await client.patients.create({ first_name: 'Queued', last_name: 'ForFirst' });
      await client.signInWithTokens({ token: second.token, refresh_token: second.refreshToken, expires_in: 3600 });
      proxy.restore();
      await eventually(() => assert.equal(client.sync.status.halted, 'other_user_outbox'), { timeoutMs: 30_000 });
      assert.equal(client.sync.status.pending, 1, 'the write is kept for its own user');
      for (const user of [first, second]) {
        const mine = await server.api('GET', '/patient/my-patients', { token: user.token });
        assert.deepEqual(mine.body.data, [], 'uploaded under nobody');
      }
    } finally {
      await client.close();
      await proxy.close();
    }
  });
});
