/**
 * Protocol 2's `synced.acked_through` (docs/sync-protocol.md, Versioning): every `synced` on a
 * socket that said protocol 2 names the device's last processed mutation id as the feed's
 * snapshot saw it, and a batch of acks is always followed by such a `synced` — on a quiet
 * server and for mutations that changed nothing too. Protocol 1 frames are unchanged.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { ServerMessage } from '@fieldchart/schema/sync';
import { forEachBackend } from '../../helpers/backends.ts';
import { helloSync, nextFeed, type SyncSocket } from '../../helpers/sync-socket.ts';
import { startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { createPatient, utcClinician } from '../visits/visit-fixtures.ts';

type Synced = Extract<ServerMessage, { type: 'synced' }>;

/** The index in `received` of the first message at or after `from` that `where` accepts. */
function indexOf(socket: SyncSocket, from: number, where: (m: ServerMessage) => boolean): number {
  return socket.received.findIndex((m, i) => i >= from && where(m));
}

forEachBackend('sync acked_through (protocol 2)', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  const mutation = (mutation_id: number, name: string, args: Record<string, unknown>) => ({
    type: 'mutation',
    mutation_id,
    name,
    args,
    client_time: new Date().toISOString(),
  });

  test('a batch of acks is followed by a synced whose acked_through covers it, with the changes it made', async () => {
    const user = await utcClinician(server);
    const clientId = randomUUID();
    const { socket, welcome } = await helloSync(server, user.token, clientId, null, { protocol: 2 });
    assert.equal(welcome.protocol, 2);
    const first = await nextFeed(socket);
    assert.equal(first.synced.acked_through, 0, 'a new device has nothing processed');

    const patientId = randomUUID();
    const mark = socket.received.length;
    socket.send(mutation(1, 'patient.create', { uuid: patientId, first_name: 'Ada', last_name: 'Quince' }));
    await socket.next('ack', (m) => m.mutation_id === 1);
    const synced = await socket.next('synced', (m) => (m.acked_through ?? 0) >= 1);
    const ackAt = indexOf(socket, mark, (m) => m.type === 'ack');
    const syncedAt = socket.received.indexOf(synced);
    assert.ok(ackAt < syncedAt, 'the synced follows the ack');
    // What the mutation changed is in what the device received before that synced.
    const sent = socket.received.slice(mark, syncedAt).flatMap((m) => (m.type === 'changes' ? m.changes : []));
    assert.ok(sent.some((c) => c.table === 'patients' && c.id === patientId), 'the created patient arrived before acked_through covered it');
    socket.close();
  });

  test('mutations that change nothing (a reject, a replay) still get a synced with acked_through', async () => {
    const user = await utcClinician(server);
    const clientId = randomUUID();
    const { socket } = await helloSync(server, user.token, clientId, null, { protocol: 2 });
    await nextFeed(socket);

    // Refused: processed, no row written, so no notification runs the feed.
    socket.send(mutation(5, 'no.such_mutation', {}));
    await socket.next('reject', (m) => m.mutation_id === 5);
    const afterReject = await socket.next('synced', (m) => m.acked_through === 5);
    assert.ok(afterReject.cursor);

    // A replay of a processed id: answered as a duplicate, and a synced follows again.
    const mark = socket.received.length;
    socket.send(mutation(5, 'no.such_mutation', {}));
    await socket.next('reject', (m) => m.mutation_id === 5);
    await socket.next('synced', (m) => m.acked_through === 5);
    const changes = socket.received.slice(mark).flatMap((m) => (m.type === 'changes' ? m.changes : []));
    assert.deepEqual(changes, [], 'nothing changed: the run is empty');
    socket.close();

    // A reconnect's first synced already says what was processed.
    const again = await helloSync(server, user.token, clientId, afterReject.cursor, { protocol: 2 });
    assert.equal((await nextFeed(again.socket)).synced.acked_through, 5);
    again.socket.close();
  });

  test('mutations answered over HTTP while the socket is open get a synced with acked_through on it, also when they change nothing', async () => {
    // The device's HTTP request was still out when its socket was welcomed (the client lets it
    // finish): the answer comes back over HTTP after the socket's first run. A refusal writes
    // no row, so no table notification would run the socket's feed again.
    const user = await utcClinician(server);
    const clientId = randomUUID();
    const { socket } = await helloSync(server, user.token, clientId, null, { protocol: 2 });
    assert.equal((await nextFeed(socket)).synced.acked_through, 0);
    const res = await server.api('POST', '/sync/mutations', {
      token: user.token,
      body: { client_id: clientId, protocol: 2, mutations: [{ mutation_id: 3, name: 'no.such_mutation', args: {}, client_time: new Date().toISOString() }] },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.data.results[0].type, 'reject');
    await socket.next('synced', (m) => m.acked_through === 3);
    socket.close();
  });

  test('acked_through follows another device’s write of the same user only for this device’s own ids', async () => {
    const user = await utcClinician(server);
    const mine = await helloSync(server, user.token, randomUUID(), null, { protocol: 2 });
    await nextFeed(mine.socket);
    const other = await helloSync(server, user.token, randomUUID(), null, { protocol: 2 });
    await nextFeed(other.socket);
    other.socket.send(mutation(9, 'patient.create', { uuid: randomUUID(), first_name: 'Bo', last_name: 'Reed' }));
    await other.socket.next('synced', (m) => m.acked_through === 9);
    // This device sees the change through the usual poke, with its own (empty) counter.
    const poked: Synced = (await nextFeed(mine.socket)).synced;
    assert.equal(poked.acked_through, 0);
    mine.socket.close();
    other.socket.close();
  });

  test('protocol 1: synced carries no acked_through', async () => {
    const user = await utcClinician(server);
    const { socket, welcome } = await helloSync(server, user.token, randomUUID());
    assert.equal(welcome.protocol, 1);
    const first = await nextFeed(socket);
    assert.ok(!('acked_through' in first.synced));
    await createPatient(server, user);
    const live = await nextFeed(socket);
    assert.ok(!('acked_through' in live.synced));
    socket.close();
  });
});
