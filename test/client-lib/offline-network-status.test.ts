/**
 * The client hears the platform's network (`network` option; in browsers the `online` and
 * `offline` events): losing it drops the open sync socket at once — which otherwise stays
 * open and dead, as in Chromium's offline mode (test/client-lib/browser-offline.test.ts) — and
 * regaining it reconnects at once instead of waiting out the backoff.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { createFieldchartClient, type NetworkStatus } from '../../client-lib/src/index.ts';
import { forEachBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { utcClinician } from '../server/visits/visit-fixtures.ts';
import { emptyDeviceImage } from '../helpers/empty-device-image.ts';

/** A network the test switches, as a browser's events would. */
function switchableNetwork(): NetworkStatus & { set(online: boolean): void } {
  let online = true;
  const watchers = new Set<{ offline(): void; online(): void }>();
  return {
    get online() {
      return online;
    },
    watch(handlers) {
      watchers.add(handlers);
      return () => watchers.delete(handlers);
    },
    set(next) {
      online = next;
      for (const w of watchers) (next ? w.online : w.offline)();
    },
  };
}

forEachBackend('the client and the platform network', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('offline drops the open socket at once; online reconnects without waiting out the backoff', async () => {
    const user = await utcClinician(server);
    const network = switchableNetwork();
    // A backoff of a minute: a reconnect within the test's deadlines is the `online` event's doing.
    const client = await createFieldchartClient({ baseUrl: server.url, dataDir: 'memory://', pglite: { loadDataDir: await emptyDeviceImage() }, backoff: { initialMs: 60_000, maxMs: 60_000 }, network });
    try {
      await client.signIn({ email: user.email, password: user.password });
      await client.sync.whenSynced({ timeoutMs: 30_000 });

      // The socket itself is healthy (nothing cut it): only the platform's word ends it.
      network.set(false);
      await eventually(() => {
        assert.equal(client.sync.status.connected, false, JSON.stringify(client.sync.status));
        assert.equal(client.sync.status.lastError?.code, 'offline');
      }, { timeoutMs: 5_000 });

      network.set(true);
      await eventually(() => assert.equal(client.sync.status.connected, true, JSON.stringify(client.sync.status)), { timeoutMs: 20_000 });
      await client.sync.whenSynced({ timeoutMs: 30_000 });
    } finally {
      await client.close();
    }
  });
});
