/**
 * The change feed and the session against a stand-in sync peer: checkpoint atomicity, reset,
 * window pruning, hello (token in the message, never in the URL), refresh on 4401 and in-band,
 * and the close codes that stop the client.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eventually } from '../helpers/eventually.ts';
import { ProtocolPeer, patientRow, visitRow } from './protocol-peer.ts';
import { signedInClient, uuid } from './support.ts';

let peer: ProtocolPeer;
before(async () => {
  peer = await ProtocolPeer.start();
});
after(async () => {
  await peer.close();
});

test('a feed unit is applied with its checkpoint or not at all; the device resumes from the stored cursor', async () => {
  peer.onHello = () => null;
  const client = await signedInClient(peer.url);
  try {
    await client.sync.whenSynced({ timeoutMs: 20_000 });
    const cursorHellos = peer.hellos.length;
    const p = uuid();
    const v = uuid();
    peer.onHello = () => 4429; // stay offline after the cut
    peer.publishAndCutBeforeCheckpoint([
      { table: 'patients', op: 'upsert', id: p, row: patientRow(p) },
      { table: 'visits', op: 'upsert', id: v, row: visitRow(v, p, '2026-11-25') },
    ]);
    await eventually(() => assert.ok(peer.hellos.length > cursorHellos, 'not yet: peer.hellos.length > cursorHellos'));
    assert.equal(await client.visits.get(v), null, 'half a unit is never visible');
    assert.equal(await client.patients.get(p), null);
    const refusedCursor = peer.hellos.at(-1)?.cursor;
    peer.onHello = () => null;
    await eventually(async () => assert.equal((await client.visits.get(v))?.patient?.uuid, p), { timeoutMs: 20_000 });
    const resumed = peer.hellos.filter((h) => h.cursor === refusedCursor);
    assert.ok(resumed.length >= 2, 'resumed from the cursor stored before the cut');
  } finally {
    await client.close();
  }
});

test('deletes remove rows; visits outside the window are pruned with their events, notes and mileage', async () => {
  peer.onHello = () => null;
  const client = await signedInClient(peer.url);
  try {
    const inside = uuid();
    const outside = uuid();
    const gone = uuid();
    peer.publish([
      { table: 'visits', op: 'upsert', id: inside, row: visitRow(inside, null, '2026-11-22') },
      { table: 'visits', op: 'upsert', id: outside, row: visitRow(outside, null, '2026-10-01') },
      { table: 'visits', op: 'upsert', id: gone, row: visitRow(gone, null, '2026-11-23') },
      { table: 'visit_mileage', op: 'upsert', id: outside, row: { schedule_uuid: outside, total_miles: 3, travel_miles: null, onsite_miles: null, recorded_at: '2026-10-01T10:00:00.000Z' } },
    ]);
    await eventually(async () => assert.ok(await client.visits.get(outside), 'not yet: await client.visits.get(outside)'));
    peer.publish([{ table: 'visits', op: 'delete', id: gone }]);
    await eventually(async () => assert.equal(await client.visits.get(gone), null));
    peer.window = { from: '2026-11-01', to: '2026-12-31' };
    client.sync.reconnect();
    await eventually(async () => assert.equal(await client.visits.get(outside), null), { timeoutMs: 20_000 });
    assert.ok(await client.visits.get(inside));
  } finally {
    peer.window = { from: '2000-01-01', to: '2100-01-01' };
    await client.close();
  }
});

test('notifications from the feed are readable offline, newest first, filtered by read state; a delete removes one', async () => {
  peer.onHello = () => null;
  const client = await signedInClient(peer.url);
  try {
    const [older, newer] = [uuid(), uuid()];
    const note = (id: string, createdAt: string, isRead: boolean) => ({
      uuid: id,
      type: 'message_received',
      title: 'New message',
      body: 'A patient replied to your message.',
      data: { conversation_id: 7 },
      is_read: isRead,
      read_at: isRead ? createdAt : null,
      created_at: createdAt,
    });
    peer.publish([
      { table: 'notifications', op: 'upsert', id: older, row: note(older, '2026-11-20T10:00:00.000Z', true) },
      { table: 'notifications', op: 'upsert', id: newer, row: note(newer, '2026-11-21T10:00:00.000Z', false) },
    ]);
    await eventually(async () => assert.deepEqual((await client.notifications.list()).map((n) => n.uuid), [newer, older]));
    assert.deepEqual((await client.notifications.list({ unreadOnly: true })).map((n) => n.uuid), [newer]);
    assert.equal((await client.notifications.list())[0]?.data.conversation_id, 7);
    peer.publish([{ table: 'notifications', op: 'delete', id: older }]);
    await eventually(async () => assert.deepEqual((await client.notifications.list()).map((n) => n.uuid), [newer]));
  } finally {
    await client.close();
  }
});

test('hello carries the token (never the URL); 4401 refreshes over REST and reconnects; the token is refreshed in-band before expiry', async () => {
  const refreshes = peer.refreshCalls.length;
  let refused = false;
  peer.onHello = (h) => {
    if (h.token === 'token-0' && !refused) {
      refused = true;
      return 4401;
    }
    return null;
  };
  // Welcome says the token expires soon: the client refreshes and sends `auth` on the socket.
  peer.tokenExpiresAt = () => new Date(Date.now() + 7_000).toISOString();
  const client = await signedInClient(peer.url);
  try {
    await eventually(() => assert.equal(client.sync.status.connected, true), { timeoutMs: 20_000 });
    assert.ok(peer.upgradeUrls.every((u) => !u.includes('token')));
    assert.equal(peer.refreshCalls[refreshes], 'refresh-0');
    assert.notEqual(peer.hellos.at(-1)?.token, 'token-0');
    const authBefore = peer.authTokens.length;
    await eventually(() => assert.ok(peer.authTokens.length > authBefore, 'not yet: peer.authTokens.length > authBefore'), { timeoutMs: 20_000 });
    assert.equal(peer.authTokens.at(-1), `token-${peer.refreshCalls.length}`);
  } finally {
    peer.tokenExpiresAt = () => new Date(Date.now() + 3600_000).toISOString();
    peer.onHello = () => null;
    await client.close();
  }
});

test('4409 superseded: the client comes back under a new client id; 4403: it signs out', async () => {
  peer.onHello = () => null;
  const a = await signedInClient(peer.url);
  await eventually(() => assert.ok(a.sync.status.connected, 'not yet: a.sync.status.connected'));
  const sa = peer.open().at(-1);
  const firstId = sa?.hello.client_id;
  const b = await signedInClient(peer.url);
  try {
    await eventually(() => assert.ok(b.sync.status.connected, 'not yet: b.sync.status.connected'));
    const sb = peer.open().at(-1);
    const hellosOfB = () => peer.hellos.filter((h) => h.client_id === sb?.hello.client_id).length;
    const before = hellosOfB();
    sa?.ws.close(4409, 'superseded');
    sb?.ws.close(4403, 'disabled');
    await eventually(() => assert.equal(b.sync.status.halted, 'account_disabled'));
    assert.equal(b.sync.status.signedIn, false);
    // The taken-over install is not stopped: it comes back, then parts ids.
    await eventually(() => assert.equal(a.sync.status.lastError?.code, 'superseded'));
    assert.equal(a.sync.status.halted, null);
    await eventually(() => {
      const last = peer.hellos.at(-1);
      assert.ok(last && last.client_id !== firstId && last.client_id !== sb?.hello.client_id, 'a hello under a new client id');
      assert.ok(a.sync.status.connected, 'not yet: a.sync.status.connected');
    }, { timeoutMs: 10_000 });
    assert.equal(hellosOfB(), before, 'the disabled one does not reconnect');
  } finally {
    await a.close();
    await b.close();
  }
});
