/**
 * An app that ships before the servers are upgraded: its hello says this library's protocol,
 * a server that speaks only older ones closes with 4426 and names them, and the device says the
 * newest it also speaks on the next socket — syncing on, nothing lost — instead of stopping
 * until the server is upgraded. A server that names none the device speaks (or keeps refusing)
 * stops it, after trying each version at most once.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { CLOSE_CODES, PROTOCOL_VERSION, protocolUnsupportedReason } from '@fieldchart/schema/sync';
import { eventually } from '../helpers/eventually.ts';
import { ProtocolPeer, patientRow, visitRow } from './protocol-peer.ts';
import { ev, signedInClient, uuid } from './support.ts';
import { localDate } from '../../client-lib/src/index.ts';

let peer: ProtocolPeer;
before(async () => {
  peer = await ProtocolPeer.start();
});
after(() => peer.close());

/** A server of an earlier release: it speaks `spoken` and refuses anything else as such servers did. */
function olderServer(spoken: number[]): void {
  peer.onHello = (hello) => (spoken.includes(hello.protocol) ? null : { code: CLOSE_CODES.protocol_unsupported, reason: protocolUnsupportedReason(spoken) });
}

test('a server that speaks only older protocols is spoken to in the newest of them: welcomed, synced, writes acknowledged', async () => {
  assert.equal(PROTOCOL_VERSION, 5, 'this test stands for a server one version behind the library');
  olderServer([1, 2, 3, 4]);
  peer.maxInFlight = 50;
  peer.onMutation = () => ({ ack: null });
  const patient = uuid();
  const visitId = uuid();
  peer.publish([
    { table: 'patients', op: 'upsert', id: patient, row: patientRow(patient) },
    { table: 'visits', op: 'upsert', id: visitId, row: visitRow(visitId, patient, localDate(new Date())) },
  ]);
  const hellos = peer.hellos.length;
  const client = await signedInClient(peer.url);
  try {
    await client.sync.whenSynced({ timeoutMs: 20_000 });
    assert.deepEqual(
      peer.hellos.slice(hellos).map((h) => h.protocol),
      [5, 4],
    );
    await client.visits.recordTimerEvents(visitId, [ev('start_travel', '2026-11-21T14:00:00.000Z')]);
    await client.sync.whenSynced({ timeoutMs: 20_000 });
    assert.equal(client.sync.status.pending, 0);
    assert.equal(client.sync.status.halted, null);
    assert.equal(client.sync.status.lastError, null, 'stepping down is not a failure to show');

    // The next socket of this engine says 4 at once: no refused hello per reconnect.
    peer.closeAll(1001);
    await eventually(() => assert.equal(peer.hellos.length - hellos, 3));
    assert.equal(peer.hellos.at(-1)?.protocol, 4);
    await client.sync.whenSynced({ timeoutMs: 20_000 });
  } finally {
    await client.close();
    peer.maxInFlight = null;
  }
});

test('a server that names no version the device speaks, or refuses each it names, stops it after one try of each', async () => {
  for (const [refuse, expected] of [
    [(): { code: number; reason: string } => ({ code: CLOSE_CODES.protocol_unsupported, reason: protocolUnsupportedReason([6, 7]) }), [5]],
    [(): { code: number; reason: string } => ({ code: CLOSE_CODES.protocol_unsupported, reason: protocolUnsupportedReason([1, 2, 3]) }), [5, 3, 2, 1]],
    [(): { code: number; reason: string } => ({ code: CLOSE_CODES.protocol_unsupported, reason: 'update the app' }), [5]],
  ] as const) {
    peer.onHello = refuse;
    const hellos = peer.hellos.length;
    const client = await signedInClient(peer.url);
    try {
      await eventually(() => assert.equal(client.sync.status.halted, 'protocol_unsupported'), { timeoutMs: 20_000 });
      assert.deepEqual(
        peer.hellos.slice(hellos).map((h) => h.protocol),
        expected,
      );
      assert.equal(client.sync.status.lastError?.code, 'protocol_unsupported');
    } finally {
      await client.close();
    }
  }
});
