/**
 * The notification history: `notifications.record(tx, …)` in the caller's transaction, the
 * REST list (pagination, is_read filter), mark-read endpoints with tenant isolation, the
 * producers (join-request approval, invitation to a verified address) and the sync feed's
 * `notifications` table.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../../helpers/backends.ts';
import { helloSync, nextFeed } from '../../helpers/sync-socket.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { verifyEmail } from '../../helpers/verify-email.ts';
import { memberOf, orgWithAdmin } from '../organizations/org-fixtures.ts';

forEachBackend('notifications: history, read state, producers, sync feed', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  const record = (userId: string, type: 'note_ready' | 'note_failed' | 'visit_changed', data: Record<string, string> = {}) =>
    server.runtime.services.notifications.record(server.runtime.database.db, { userId, type, data });
  const list = (token: string, query = '') => server.api('GET', `/notifications${query}`, { token });

  test('list: newest first, paginated with meta, filtered by is_read; 422 for bad query values; 401', async () => {
    const me = await registerUser(server);
    const other = await registerUser(server);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await record(me.uuid, 'note_ready', { schedule_uuid: randomUUID() }));
    await record(other.uuid, 'note_failed');

    const first = await list(me.token, '?per_page=5');
    assert.equal(first.status, 200);
    assert.deepEqual(first.body.meta, { current_page: 1, per_page: 5, total: 12, last_page: 3 });
    assert.equal(first.body.data[0].uuid, ids[11], 'newest first');
    const n = first.body.data[0];
    assert.deepEqual(Object.keys(n).sort(), ['body', 'created_at', 'data', 'is_read', 'read_at', 'title', 'type', 'uuid']);
    assert.deepEqual([n.type, n.title, n.is_read, n.read_at], ['note_ready', 'Your note is ready', false, null]);
    assert.match(n.data.schedule_uuid, /^[0-9a-f-]{36}$/);
    const last = await list(me.token, '?per_page=5&page=3');
    assert.deepEqual(last.body.data.map((x: { uuid: string }) => x.uuid), [ids[1], ids[0]]);

    assert.equal((await server.api('PUT', `/notifications/${ids[0]}/read`, { token: me.token })).status, 200);
    const read = await list(me.token, '?is_read=1');
    assert.deepEqual(read.body.data.map((x: { uuid: string }) => x.uuid), [ids[0]]);
    assert.equal(read.body.data[0].is_read, true);
    assert.ok(!Number.isNaN(Date.parse(read.body.data[0].read_at)));
    assert.equal((await list(me.token, '?is_read=0')).body.meta.total, 11);
    assert.equal((await list(me.token)).body.meta.total, 12);

    const clamped = await list(me.token, '?per_page=100000000000000000000000');
    assert.equal(clamped.status, 200);
    assert.equal(clamped.body.meta.per_page, 100);
    assert.equal(clamped.body.data.length, 12);
    for (const q of ['?is_read=2', '?is_read=true', '?per_page=0', '?page=0']) {
      const bad = await list(me.token, q);
      assert.equal(bad.status, 422, q);
      assert.equal(bad.body.status, false);
      assert.ok(bad.body.errors, q);
    }
    assert.equal((await server.api('GET', '/notifications')).status, 401);
  });

  test('mark read: one, then all; 404 for unknown, malformed and another user’s; others untouched', async () => {
    const me = await registerUser(server);
    const other = await registerUser(server);
    const mine = [await record(me.uuid, 'visit_changed'), await record(me.uuid, 'visit_changed'), await record(me.uuid, 'visit_changed')];
    const theirs = await record(other.uuid, 'visit_changed');

    for (const id of [theirs, randomUUID(), 'not-a-uuid']) {
      const res = await server.api('PUT', `/notifications/${id}/read`, { token: me.token });
      assert.equal(res.status, 404, id);
      assert.equal(res.body.code, 'notification_not_found');
    }
    assert.equal((await list(other.token, '?is_read=0')).body.meta.total, 1, 'the foreign one stays unread');

    assert.equal((await server.api('PUT', `/notifications/${mine[0]}/read`, { token: me.token })).status, 200);
    const readAt = (await list(me.token, '?is_read=1')).body.data[0].read_at;
    assert.equal((await server.api('PUT', `/notifications/${mine[0]}/read`, { token: me.token })).status, 200, 'again: still 200');
    assert.equal((await list(me.token, '?is_read=1')).body.data[0].read_at, readAt, 'read_at unchanged');

    const all = await server.api('PUT', '/notifications/read-all', { token: me.token });
    assert.equal(all.status, 200);
    assert.match(all.body.message, /^2 notifications marked read$/);
    assert.equal((await list(me.token, '?is_read=0')).body.meta.total, 0);
    assert.equal((await list(other.token, '?is_read=0')).body.meta.total, 1, 'read-all is the caller’s only');
    assert.equal((await server.api('PUT', '/notifications/read-all')).status, 401);
  });

  test('record() joins the caller’s transaction: a rollback leaves no notification', async () => {
    const me = await registerUser(server);
    await assert.rejects(
      server.runtime.database.db.transaction(async (tx) => {
        await server.runtime.services.notifications.record(tx, { userId: me.uuid, type: 'note_ready', data: { schedule_uuid: randomUUID() } });
        throw new Error('the caller fails after recording');
      }),
      /the caller fails/,
    );
    assert.equal((await list(me.token)).body.meta.total, 0);
  });

  test('producers: an approved join request and an invitation to a verified address notify the user', async () => {
    const org = await orgWithAdmin(server);
    const joiner = await memberOf(server, org);
    const joined = await list(joiner.token);
    assert.deepEqual(joined.body.data.map((x: { type: string }) => x.type), ['join_request_approved']);
    assert.equal(joined.body.data[0].data.organization_uuid, org.uuid);

    const invitee = await registerUser(server);
    await verifyEmail(server, invitee);
    const unverified = await registerUser(server);
    for (const email of [invitee.email, unverified.email]) {
      const sent = await server.api('POST', '/my-organization/invitations', { token: org.admin.token, body: { email } });
      assert.equal(sent.status, 200, JSON.stringify(sent.body));
    }
    const invited = await list(invitee.token);
    assert.deepEqual(invited.body.data.map((x: { type: string }) => x.type), ['invitation_received']);
    const mine = await server.api('GET', '/my-invitations', { token: invitee.token });
    assert.equal(invited.body.data[0].data.invitation_uuid, mine.body.data[0].uuid);
    assert.equal((await list(unverified.token)).body.meta.total, 0, 'an unverified address sees no invitation, so no notification');
  });

  test('the sync feed carries notifications: the backlog on first sync, then new ones and read state live', async () => {
    const me = await registerUser(server);
    const backlog = await record(me.uuid, 'note_ready', { schedule_uuid: randomUUID() });
    const { socket } = await helloSync(server, me.token, randomUUID());
    const first = await nextFeed(socket);
    const row = first.changes.find((c) => c.table === 'notifications');
    assert.ok(row?.op === 'upsert', JSON.stringify(first.changes));
    assert.equal(row.id, backlog);
    assert.deepEqual([(row.row as { type: string }).type, (row.row as { is_read: boolean }).is_read], ['note_ready', false]);

    const live = await record(me.uuid, 'note_failed');
    const next = await nextFeed(socket);
    assert.deepEqual(next.changes.filter((c) => c.table === 'notifications').map((c) => c.id), [live]);

    assert.equal((await server.api('PUT', `/notifications/${live}/read`, { token: me.token })).status, 200);
    const read = await nextFeed(socket);
    const changed = read.changes.find((c) => c.table === 'notifications' && c.id === live);
    assert.ok(changed?.op === 'upsert');
    assert.equal((changed.row as { is_read: boolean }).is_read, true);
    socket.close();
  });
});
