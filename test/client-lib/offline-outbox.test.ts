/**
 * The outbox against a stand-in sync peer: writes shown at once and sent in order with strictly
 * increasing ids, at most 100 unanswered, surviving a restart, never re-sending a rejected
 * entry, retrying the head after `retry`, and sign-out refusing to drop unsynced work.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';
import { visit as visitSchema } from '@fieldchart/schema/api';
import { OutboxNotEmptyError, localDate } from '../../client-lib/src/index.ts';
import { eventually } from '../helpers/eventually.ts';
import { ProtocolPeer, patientRow, visitRow } from './protocol-peer.ts';
import { ev, openClient, signedInClient, tempDataDir, uuid } from './support.ts';

let peer: ProtocolPeer;
before(async () => {
  peer = await ProtocolPeer.start();
});
after(async () => {
  await peer.close();
});

function freshPeerState() {
  peer.onMutation = () => ({ ack: null });
  peer.onHello = () => null;
}

test('reads are local and instant offline; offline writes show at once and reach the server in order, once each', async () => {
  freshPeerState();
  const patient = uuid();
  const visitId = uuid();
  const today = localDate(new Date());
  peer.publish([
    { table: 'patients', op: 'upsert', id: patient, row: patientRow(patient) },
    { table: 'visits', op: 'upsert', id: visitId, row: visitRow(visitId, patient, today) },
  ]);
  const client = await signedInClient(peer.url);
  try {
    await client.sync.whenSynced({ timeoutMs: 20_000 });
    const [v] = await client.visits.today();
    assert.ok(v);
    visitSchema.parse(v); // the REST Visit shape, assembled on the device
    assert.equal(v.patient?.last_name, 'Okafor');

    // Offline: the server refuses new sockets and drops this one.
    peer.onHello = () => 4429;
    peer.closeAll(1001);
    await eventually(() => assert.equal(client.sync.status.connected, false));
    await client.visits.recordTimerEvents(visitId, [ev('start_travel', '2026-11-21T14:00:00.000Z'), ev('arrive', '2026-11-21T14:20:00.000Z')]);
    await client.visits.setMileage(visitId, { total_miles: 12.5, travel_miles: 10 });
    await client.patients.update(patient, { last_name: 'Okafor-Reyes' });
    const shown = await client.visits.get(visitId);
    assert.equal(shown?.status, 'in_progress');
    assert.equal(shown?.evv.arrived_at, '2026-11-21T14:20:00.000Z');
    assert.equal(shown?.evv.drive_minutes, 20);
    assert.equal(shown?.mileage?.total_miles, 12.5);
    assert.equal(shown?.patient?.last_name, 'Okafor-Reyes');
    assert.equal(client.sync.status.pending, 3);
    assert.equal((await client.visits.receipt(visitId)).state, 'on_device');

    peer.onHello = () => null;
    await client.sync.whenSynced({ timeoutMs: 20_000 });
    const mine = peer.applied.filter((m) => m.args.schedule_uuid === visitId || m.args.uuid === visitId || m.args.uuid === patient);
    assert.deepEqual(mine.map((m) => m.name), ['visit.timer_events', 'visit.mileage', 'patient.update']);
    const ids = mine.map((m) => m.mutation_id);
    assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
    assert.equal(new Set(peer.applied.map((m) => `${m.mutation_id}`)).size, peer.applied.length);
    assert.equal((await client.visits.receipt(visitId)).state, 'acknowledged');
  } finally {
    await client.close();
  }
});

// As many as the socket's welcome allows (protocol 3's max_in_flight), 100 where it names none.
for (const window of [null, 250] as const) {
  const limit = window ?? 100;
  test(`at most ${limit} mutations are in flight unanswered${window === null ? ' (a welcome without max_in_flight)' : ' (welcome.max_in_flight)'}; the rest follow as acks come`, async () => {
    freshPeerState();
    peer.maxInFlight = window;
    peer.onMutation = () => 'hold';
    const client = await signedInClient(peer.url);
    try {
      const before = peer.frames.length;
      const total = limit + 30;
      for (let i = 0; i < total; i++) await client.patients.create({ first_name: 'P', last_name: `N${i}` });
      await eventually(() => assert.equal(peer.frames.length - before, limit), { timeoutMs: 20_000 });
      // Nothing more may come before an answer (this can only pass wrongly, never fail wrongly).
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(peer.frames.length - before, limit);
      peer.onMutation = () => ({ ack: null });
      peer.release();
      await client.sync.whenSynced({ timeoutMs: 20_000 });
      const sent = peer.frames.slice(before).map((m) => m.mutation_id);
      assert.equal(sent.length, total);
      assert.deepEqual(sent, [...sent].sort((a, b) => a - b));
      assert.equal((await client.patients.list()).length >= total, true);
    } finally {
      peer.maxInFlight = null;
      await client.close();
    }
  });
}

test('protocol 5: an outbox written offline goes in `mutations` frames of at most 500 on reconnect, each mutation once and in order', async () => {
  freshPeerState();
  peer.speaks = 5;
  peer.maxInFlight = 2000;
  const client = await signedInClient(peer.url);
  try {
    await client.sync.whenSynced({ timeoutMs: 20_000 });
    peer.onHello = () => 4429;
    peer.closeAll(1001);
    await eventually(() => assert.equal(client.sync.status.connected, false));
    // Just over one frame's 500: the cut shows, at half the device writes of a round thousand.
    const total = 520;
    for (let i = 0; i < total; i++) await client.patients.create({ first_name: 'P', last_name: `Frame${i}` });
    const before = peer.frames.length;
    const framesBefore = peer.mutationsFrames.length;
    peer.onHello = () => null;
    await client.sync.whenSynced({ timeoutMs: 30_000 });
    const sent = peer.frames.slice(before).map((m) => m.mutation_id);
    assert.equal(sent.length, total);
    assert.deepEqual(sent, [...sent].sort((a, b) => a - b));
    const sizes = peer.mutationsFrames.slice(framesBefore);
    assert.equal(sizes.reduce((a, b) => a + b, 0), total, 'every mutation came in a `mutations` frame');
    assert.ok(sizes.every((n) => n >= 1 && n <= 500) && sizes.length <= 3, `frames of ${sizes.join(', ')}`);
    assert.equal(client.sync.status.pending, 0);
  } finally {
    peer.speaks = null;
    peer.maxInFlight = null;
    await client.close();
  }
});

test('a restart mid-upload resumes from the stored outbox: entries whose answers were lost are sent again and not re-applied, ids keep increasing', async () => {
  freshPeerState();
  const dir = tempDataDir();
  try {
    peer.onMutation = () => 'hold';
    const hellos = peer.hellos.length;
    const first = await signedInClient(peer.url, dir);
    await eventually(() => assert.ok(peer.hellos.length > hellos, 'not yet: peer.hellos.length > hellos'));
    const clientId = peer.hellos.at(-1)?.client_id;
    const before = peer.frames.length;
    for (const name of ['A', 'B', 'C']) await first.patients.create({ first_name: name, last_name: 'Restart' });
    await eventually(() => assert.equal(peer.frames.length - before, 3));
    const sent = peer.frames.slice(before);
    // The server processes the first two, but the device closes before the acks arrive.
    await first.close();
    peer.held = [];
    peer.lastMutationId.set(clientId as string, sent[1]?.mutation_id as number);

    peer.onMutation = () => ({ ack: null });
    const second = await openClient(peer.url, dir); // no sign-in: the session was stored
    try {
      assert.equal(second.sync.status.signedIn, true);
      await second.sync.whenSynced({ timeoutMs: 20_000 });
      assert.equal(peer.hellos.at(-1)?.client_id, clientId, 'one client id per install');
      // Their answers were lost, so all three go again; the server answers the two it has as
      // duplicates (not applied twice) and applies the third.
      const after = peer.frames.slice(before + 3);
      assert.deepEqual(after.map((m) => m.mutation_id), sent.map((m) => m.mutation_id), 'the unanswered entries are sent again, in order');
      assert.deepEqual(peer.applied.filter((m) => m.args.last_name === 'Restart').map((m) => m.mutation_id), [sent[2]?.mutation_id], 'only the unprocessed one is applied');
      assert.equal(second.sync.status.pending, 0);
      const { uuid: d } = await second.patients.create({ first_name: 'D', last_name: 'Restart' });
      await second.sync.whenSynced({ timeoutMs: 20_000 });
      const last = peer.frames.at(-1);
      assert.equal(last?.args.uuid, d);
      assert.ok((last?.mutation_id ?? 0) > (sent[2]?.mutation_id ?? 0), 'the counter survived the restart');
    } finally {
      await second.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a rejected write is rolled back, recorded for the app, never sent again; later writes still go', async () => {
  freshPeerState();
  const client = await signedInClient(peer.url);
  try {
    peer.onMutation = (m) =>
      m.name === 'patient.update' ? { reject: { status: 422, code: 'validation_failed', message: 'No' } } : { ack: null };
    const seen: string[] = [];
    client.rejections.on((r) => seen.push(r.code));
    const { uuid: p } = await client.patients.create({ first_name: 'Ada', last_name: 'Lovelace' });
    await client.patients.update(p, { first_name: 'Augusta' });
    assert.equal((await client.patients.get(p))?.first_name, 'Augusta');
    const { uuid: v } = await client.visits.schedule({ patient_uuid: p, visit_date: '2026-11-30', start_time: '10:00' });
    await client.sync.whenSynced({ timeoutMs: 20_000 });
    assert.equal((await client.patients.get(p))?.first_name, 'Ada', 'rolled back');
    const rejections = await client.rejections.list();
    assert.equal(rejections.length, 1);
    assert.equal(rejections[0]?.code, 'validation_failed');
    assert.equal(rejections[0]?.name, 'patient.update');
    assert.deepEqual(seen, ['validation_failed']);
    const updateFrames = peer.frames.filter((m) => m.name === 'patient.update' && m.args.uuid === p);
    assert.equal(updateFrames.length, 1, 'a poisoned entry is not retried');
    assert.ok(peer.applied.some((m) => m.name === 'visit.schedule' && m.args.uuid === v));
    await client.rejections.dismiss();
    assert.deepEqual(await client.rejections.list(), []);
  } finally {
    await client.close();
  }
});

test('answers gathered in one frame (protocol 4) are handled in order, as if each came alone', async () => {
  freshPeerState();
  const client = await signedInClient(peer.url);
  try {
    await client.sync.whenSynced({ timeoutMs: 20_000 });
    assert.ok((peer.hellos.at(-1)?.protocol ?? 0) >= 4, 'the client speaks protocol 4 or later');
    peer.onMutation = () => 'hold';
    const before = peer.frames.length;
    const created: string[] = [];
    for (const name of ['A', 'B', 'C', 'D', 'E']) created.push((await client.patients.create({ first_name: name, last_name: 'Gathered' })).uuid);
    await eventually(() => assert.equal(peer.frames.length - before, 5));
    // One frame for all five: C refused, the others acknowledged.
    peer.onMutation = () => ({ ack: null });
    peer.release((m) => (m.args.first_name === 'C' ? { reject: { status: 422, code: 'validation_failed', message: 'No' } } : { ack: null }), true);
    await client.sync.whenSynced({ timeoutMs: 20_000 });
    const rejections = await client.rejections.list();
    assert.deepEqual(
      rejections.map((r) => [r.name, r.code]),
      [['patient.create', 'validation_failed']],
    );
    assert.equal(client.sync.status.pending, 0);
    assert.equal(await client.patients.get(created[2] as string), null, 'the refused create rolled back');
    for (const i of [0, 1, 3, 4]) assert.equal((await client.patients.get(created[i] as string))?.last_name, 'Gathered');
    await client.rejections.dismiss();
  } finally {
    await client.close();
  }
});

test('retry keeps the head in place and resends it, with what followed, in order', async () => {
  freshPeerState();
  const client = await signedInClient(peer.url);
  try {
    let retried = 0;
    peer.onMutation = (m) => (m.args.last_name === 'First' && retried++ < 2 ? { retry: 30 } : { ack: null });
    const before = peer.applied.length;
    await client.patients.create({ first_name: 'A', last_name: 'First' });
    await client.patients.create({ first_name: 'B', last_name: 'Second' });
    await client.sync.whenSynced({ timeoutMs: 20_000 });
    assert.deepEqual(peer.applied.slice(before).map((m) => m.args.last_name), ['First', 'Second']);
    assert.equal(retried, 3);
  } finally {
    await client.close();
  }
});

test('signOut refuses while writes exist only on the device; force discards them', async () => {
  freshPeerState();
  peer.onMutation = () => 'hold';
  const client = await signedInClient(peer.url);
  try {
    await client.patients.create({ first_name: 'Un', last_name: 'Synced' });
    await assert.rejects(client.signOut(), (err: unknown) => err instanceof OutboxNotEmptyError && err.pending === 1);
    assert.equal(client.sync.status.signedIn, true);
    await client.signOut({ force: true });
    assert.equal(client.sync.status.signedIn, false);
    assert.deepEqual(await client.patients.list(), []);
  } finally {
    peer.held = [];
    await client.close();
  }
});
