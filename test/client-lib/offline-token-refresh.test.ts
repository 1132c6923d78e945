/**
 * A refresh whose answer is lost: the server has rotated the refresh token, the device still
 * holds the old one. Its retry carries the same Idempotency-Key and gets the first answer
 * again — without it the server would take the retry for token theft and revoke the session,
 * leaving the device signed out with writes in its outbox.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createFieldchartClient } from '@fieldchart/client';
import { forEachBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { emptyDeviceImage } from '../helpers/empty-device-image.ts';

forEachBackend('offline client: a lost refresh answer', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('the retried refresh gets the same pair; the session and the outbox survive', async () => {
    const user = await registerUser(server);
    let refreshes = 0;
    let fakeUnauthorized = 0;
    // The network between app and server: the first refresh reaches the server, its answer
    // never comes back; two profile reads are answered 401 (an expired token) to make the
    // client refresh on demand.
    const fetchThroughFlakyNetwork: typeof fetch = async (input, init) => {
      const url = String(input instanceof Request ? input.url : input);
      if (url.endsWith('/my-profile') && fakeUnauthorized < 2) {
        fakeUnauthorized++;
        return new Response(JSON.stringify({ status: false, message: 'Invalid or expired token', code: 'invalid_token' }), {
          status: 401,
          headers: { 'content-type': 'application/json' },
        });
      }
      const res = await fetch(input, init);
      if (url.endsWith('/token/refresh') && ++refreshes === 1) throw new TypeError('fetch failed: connection reset');
      return res;
    };
    const client = await createFieldchartClient({ baseUrl: server.url, dataDir: 'memory://', pglite: { loadDataDir: await emptyDeviceImage() }, fetch: fetchThroughFlakyNetwork, backoff: { initialMs: 40, maxMs: 200 } });
    try {
      await client.signIn({ email: user.email, password: user.password });
      await client.sync.whenSynced({ timeoutMs: 30_000 });
      await assert.rejects(client.rest.myProfile(), 'the first refresh answer is lost');
      const profile = await client.rest.myProfile();
      assert.equal(profile.email, user.email);
      assert.equal(refreshes, 2);
      assert.equal(client.sync.status.signedIn, true);
      // The session is alive on the server too: a write still syncs.
      await client.patients.create({ first_name: 'Lena', last_name: 'Moss' });
      await eventually(() => assert.equal(client.sync.status.pending, 0), { timeoutMs: 30_000 });
    } finally {
      await client.close();
    }
  });
});
