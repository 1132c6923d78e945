/**
 * A socket whose opening the network swallows (the TCP connection is accepted, the upgrade is
 * never answered) is given up after OPEN_TIMEOUT_MS and tried again, rather than waiting out
 * TCP's own minute-long retries with the outbox stuck behind it.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { createFieldchartClient } from '@fieldchart/client';
import { eventually } from '../helpers/eventually.ts';
import { emptyDeviceImage } from '../helpers/empty-device-image.ts';

test('an opening socket that never completes is abandoned and retried', async () => {
  const sockets: net.Socket[] = [];
  const blackHole = net.createServer((s) => {
    sockets.push(s);
    s.on('error', () => {});
  });
  await new Promise<void>((resolve) => blackHole.listen(0, '127.0.0.1', resolve));
  const { port } = blackHole.address() as net.AddressInfo;
  const client = await createFieldchartClient({
    baseUrl: `http://127.0.0.1:${port}`,
    dataDir: 'memory://',
    pglite: { loadDataDir: await emptyDeviceImage() },
    backoff: { initialMs: 40, maxMs: 200 },
  });
  try {
    await client.signInWithTokens({ token: 'token-0', refresh_token: 'refresh-0', expires_in: 3600 });
    await eventually(() => assert.ok(sockets.length >= 2, `connects: ${sockets.length}`), { timeoutMs: 30_000 });
    assert.equal(client.sync.status.connected, false);
  } finally {
    await client.close();
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => blackHole.close(() => resolve()));
  }
});
