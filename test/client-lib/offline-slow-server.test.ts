/**
 * A server slowed by load still gets reached. Under machine load a restarted server took
 * longer than the socket's fixed 10 s handshake deadline to answer, so the device abandoned
 * every attempt just before it would have succeeded (and, counting those as failed opens,
 * added HTTP uploads to the load). Each handshake that runs out now gives the next one twice
 * as long; and a server that accepts the socket but never says `welcome` is left and tried
 * again rather than holding the device for ever.
 *
 * The load is simulated by a proxy that delivers every byte from the server late, so the
 * deadlines can be short and the test deterministic.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { createFieldchartClient } from '../../client-lib/src/index.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { ProtocolPeer } from './protocol-peer.ts';
import { emptyDeviceImage } from '../helpers/empty-device-image.ts';

/** A TCP proxy whose server → device direction is `delayMs` late (order kept). */
async function laggingProxy(target: string, delayMs: number): Promise<{ url: string; close(): Promise<void> }> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', () => setTimeout(end, delayMs));
    client.pipe(upstream);
    upstream.on('data', (chunk) => setTimeout(() => client.writable && client.write(chunk), delayMs));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let peer: ProtocolPeer;
before(async () => {
  peer = await ProtocolPeer.start();
});
after(() => peer.close());

test('a server that answers slower than the first handshake deadline is reached: each timed-out handshake gets longer', async () => {
  peer.onHello = () => null;
  // Upgrade answer and welcome each arrive 600 ms late: 1.2 s or more, against a 150 ms first deadline.
  const proxy = await laggingProxy(peer.url, 600);
  const hellos = peer.hellos.length;
  const client = await createFieldchartClient({ baseUrl: proxy.url, dataDir: 'memory://', pglite: { loadDataDir: await emptyDeviceImage() }, backoff: { initialMs: 40, maxMs: 400 }, openTimeoutMs: 150 });
  try {
    const errors: string[] = [];
    client.sync.on('status', (s) => {
      if (s.lastError) errors.push(s.lastError.message);
    });
    await client.signInWithTokens({ token: 'token-0', refresh_token: 'refresh-0', expires_in: 3600 });
    await client.sync.whenSynced({ timeoutMs: 30_000 });
    assert.ok(errors.includes('connect timeout'), `the first handshakes ran out (${errors.join(', ')})`);
    assert.ok(peer.hellos.length - hellos >= 1);
  } finally {
    await client.close();
    await proxy.close();
  }
});

test('a server that takes the socket but never says welcome is left and tried again', async () => {
  let ignored = 0;
  peer.onHello = () => (ignored++ < 2 ? 'ignore' : null);
  const client = await createFieldchartClient({ baseUrl: peer.url, dataDir: 'memory://', pglite: { loadDataDir: await emptyDeviceImage() }, backoff: { initialMs: 40, maxMs: 400 }, openTimeoutMs: 300 });
  try {
    await client.signInWithTokens({ token: 'token-0', refresh_token: 'refresh-0', expires_in: 3600 });
    await client.sync.whenSynced({ timeoutMs: 30_000 });
    assert.equal(ignored, 3, 'two hellos went unanswered, the third was welcomed');
    await eventually(() => assert.equal(client.sync.status.connected, true));
  } finally {
    peer.onHello = () => null;
    await client.close();
  }
});

test('a socket the network swallows does not hold the device past the backoff ceiling: a second one opens beside it', async () => {
  peer.onHello = () => null;
  const proxy = await startTcpProxy(peer.url);
  // The first upgrade request goes nowhere and nothing answers it, as a connect lost on a
  // moving phone; later ones pass.
  let upgrades = 0;
  proxy.stall((chunk) => chunk.subarray(0, 4).toString('latin1') === 'GET ' && upgrades++ === 0);
  const hellos = peer.hellos.length;
  // A first handshake deadline far past the 300 ms ceiling: one socket at a time would wait it out.
  const client = await createFieldchartClient({ baseUrl: proxy.url, dataDir: 'memory://', pglite: { loadDataDir: await emptyDeviceImage() }, backoff: { initialMs: 40, maxMs: 300 }, openTimeoutMs: 20_000 });
  try {
    const started = performance.now();
    await client.signInWithTokens({ token: 'token-0', refresh_token: 'refresh-0', expires_in: 3600 });
    await client.sync.whenSynced({ timeoutMs: 15_000 });
    const took = performance.now() - started;
    assert.equal(proxy.stalled, 1, 'the first socket was swallowed');
    assert.ok(took < 5_000, `synced after ${Math.round(took)} ms, within a few ceilings rather than the 20 s deadline`);
    assert.equal(peer.hellos.length - hellos, 1, 'one hello: the swallowed socket never said one, and was not kept');
    await eventually(() => assert.equal(client.sync.status.connected, true));
  } finally {
    await client.close();
    await proxy.close();
  }
});
