/**
 * Search, my-organization, organization requests, the admin's profile edits, join requests
 * (create, list, approve, reject; tenant isolation), leaving, and onboarding's
 * organization_uuid — over HTTP on a real server, on every backend.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { storePurchases, users } from '@fieldchart/schema/db';
import { eq } from 'drizzle-orm';
import { forEachBackend } from '../../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { memberOf, operate, orgWithAdmin, uniqueName } from './org-fixtures.ts';

forEachBackend('organizations: search, profile, join requests, leave', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  const subscriptionOf = async (token: string) => (await server.api('GET', '/subscription/status', { token })).body.data.subscription_status;

  test('a requested organization stays unlisted until an operator approves it; search is listed-only and case-insensitive', async () => {
    const requester = await registerUser(server);
    const word = uniqueName('Sunrise').replace(/\s+/g, '');
    const name = `${word} Home Health`;
    const requested = await server.api('POST', '/organizations/request', {
      token: requester.token,
      body: { name, type: 'home_health_agency', email: 'Office@Sunrise.example' },
    });
    assert.equal(requested.status, 200);
    assert.equal(requested.body.status, true);
    assert.equal(typeof requested.body.message, 'string');

    const before = await server.api('GET', `/organizations?search=${encodeURIComponent(word.toLowerCase())}`, { token: requester.token });
    assert.equal(before.status, 200);
    assert.deepEqual(before.body.data, [], 'requested organizations are not searchable');
    assert.equal((await server.api('GET', '/my-organization', { token: requester.token })).status, 404, 'requesting does not seat');

    const [row] = (await operate(server, 'org.list', { search: word })).items;
    assert.equal(row.status, 'requested');
    assert.equal(row.listed, false);
    const approved = await operate(server, 'org.approve', { organization: row.uuid });
    assert.equal(approved.status, 'active');
    assert.equal(approved.listed, true);
    assert.equal(approved.seated_admin, requester.uuid);
    await server.mail.waitFor(requester.email, (m) => /is approved/.test(m.subject));

    const searcher = await registerUser(server);
    const found = await server.api('GET', `/organizations?search=${encodeURIComponent(word.toUpperCase())}`, { token: searcher.token });
    assert.equal(found.status, 200);
    assert.equal(found.body.data.length, 1);
    const org = found.body.data[0];
    assert.equal(org.uuid, row.uuid);
    assert.equal(org.name, name);
    assert.equal(org.type, 'home_health_agency');
    assert.equal(org.member_count, 1);
    assert.equal(org.email, 'office@sunrise.example');
    assert.equal(org.role, null, 'the searcher has no seat there');
    assert.equal(org.status, 'active');

    // A LIKE wildcard is taken literally.
    const wild = await server.api('GET', `/organizations?search=${encodeURIComponent(`${word}%`)}`, { token: searcher.token });
    assert.deepEqual(wild.body.data, []);

    const mine = await server.api('GET', '/my-organization', { token: requester.token });
    assert.equal(mine.status, 200);
    assert.equal(mine.body.data.role, 'admin');
    assert.equal(mine.body.data.features.follow_ups, true, 'home_health_agency default');
    assert.equal(mine.body.data.terminology.note, 'visit note');
    assert.equal(await subscriptionOf(requester.token), 'org_managed');
  });

  test('GET /organizations needs a bearer token; bad requests are 422', async () => {
    assert.equal((await server.api('GET', '/organizations')).status, 401);
    const u = await registerUser(server);
    const bad = await server.api('POST', '/organizations/request', { token: u.token, body: { name: 'X', type: 'spaceship' } });
    assert.equal(bad.status, 422);
    assert.ok(bad.body.errors.type);
    const missing = await server.api('POST', '/organizations/request', { token: u.token, body: { type: 'clinic' } });
    assert.equal(missing.status, 422);
    assert.ok(missing.body.errors.name);
  });

  test('PUT /my-organization: admins edit the profile and get the recomputed features; members get 403', async () => {
    const org = await orgWithAdmin(server, { type: 'clinic' });
    const member = await memberOf(server, org);
    const denied = await server.api('PUT', '/my-organization', { token: member.token, body: { phone: '555-0100' } });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.code, 'not_organization_admin');
    const solo = await registerUser(server);
    assert.equal((await server.api('PUT', '/my-organization', { token: solo.token, body: { phone: '1' } })).status, 403);

    const invalid = await server.api('PUT', '/my-organization', { token: org.admin.token, body: { type: 'castle' } });
    assert.equal(invalid.status, 422);
    assert.ok(invalid.body.errors.type);

    const updated = await server.api('PUT', '/my-organization', {
      token: org.admin.token,
      body: { type: 'staffing_company', phone: '555-0100', address: '1 Main St' },
    });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.data.type, 'staffing_company');
    assert.equal(updated.body.data.phone, '555-0100');
    assert.equal(updated.body.data.member_count, 2);
    assert.equal(updated.body.data.features.staffing_offers, true, 'rule 6: the new type brings its defaults');
    assert.equal(updated.body.data.features.credential_sync, false, 'rule 5: no back office yet');
    const seen = await server.api('GET', '/my-organization', { token: member.token });
    assert.equal(seen.body.data.role, 'member');
    assert.equal(seen.body.data.features.earnings, true);
  });

  test('join request: 404 unknown or unlisted, 409 pending or already a member; the caller lists it', async () => {
    const org = await orgWithAdmin(server);
    const u = await registerUser(server);
    assert.equal((await server.api('POST', `/organizations/${randomUUID()}/join-request`, { token: u.token })).status, 404);
    assert.equal((await server.api('POST', '/organizations/not-a-uuid/join-request', { token: u.token })).status, 404);

    // An organization that is only requested is not joinable.
    const other = await registerUser(server);
    const hidden = uniqueName('Hidden');
    await server.api('POST', '/organizations/request', { token: other.token, body: { name: hidden, type: 'clinic' } });
    const hiddenId = (await operate(server, 'org.list', { search: hidden })).items[0].uuid;
    const unlisted = await server.api('POST', `/organizations/${hiddenId}/join-request`, { token: u.token });
    assert.equal(unlisted.status, 404);
    assert.equal(unlisted.body.code, 'organization_not_found');

    const first = await server.api('POST', `/organizations/${org.uuid}/join-request`, { token: u.token });
    assert.equal(first.status, 200);
    const again = await server.api('POST', `/organizations/${org.uuid}/join-request`, { token: u.token });
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'join_request_pending');

    const mine = await server.api('GET', '/my-join-requests', { token: u.token });
    assert.equal(mine.status, 200);
    assert.equal(mine.body.data.length, 1);
    assert.equal(mine.body.data[0].status, 'pending');
    assert.equal(mine.body.data[0].organization_uuid, org.uuid);
    assert.equal(mine.body.data[0].organization_name, org.name);

    const member = await memberOf(server, org);
    const seated = await server.api('POST', `/organizations/${org.uuid}/join-request`, { token: member.token });
    assert.equal(seated.status, 409);
    assert.equal(seated.body.code, 'already_member');
    assert.equal((await server.api('GET', '/my-join-requests')).status, 401);
  });

  test('admins list, approve and reject; approval seats the clinician as member, mails them, and is final', async () => {
    const org = await orgWithAdmin(server);
    const [alice, bob] = await Promise.all([registerUser(server), registerUser(server)]);
    await server.api('POST', `/organizations/${org.uuid}/join-request`, { token: alice.token });
    await server.api('POST', `/organizations/${org.uuid}/join-request`, { token: bob.token });

    const list = await server.api('GET', '/my-organization/join-requests', { token: org.admin.token });
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.data.map((r: any) => r.user.email).sort(), [alice.email, bob.email].sort());
    const idOf = (u: { uuid: string }) => list.body.data.find((r: any) => r.user.uuid === u.uuid).uuid as string;

    assert.equal((await server.api('POST', `/my-organization/join-requests/${idOf(alice)}/approve`, { token: alice.token })).status, 403);
    const approved = await server.api('POST', `/my-organization/join-requests/${idOf(alice)}/approve`, { token: org.admin.token });
    assert.equal(approved.status, 200);
    const mail = await server.mail.waitFor(alice.email, (m) => /You joined/.test(m.subject));
    assert.match(mail.text, new RegExp(org.name));
    const seat = await server.api('GET', '/my-organization', { token: alice.token });
    assert.equal(seat.body.data.uuid, org.uuid);
    assert.equal(seat.body.data.role, 'member');
    assert.equal(await subscriptionOf(alice.token), 'org_managed');
    assert.deepEqual((await server.api('GET', '/my-join-requests', { token: alice.token })).body.data, []);

    const twice = await server.api('POST', `/my-organization/join-requests/${idOf(alice)}/approve`, { token: org.admin.token });
    assert.equal(twice.status, 409);
    assert.equal(twice.body.code, 'join_request_not_pending');

    const rejected = await server.api('POST', `/my-organization/join-requests/${idOf(bob)}/reject`, { token: org.admin.token });
    assert.equal(rejected.status, 200);
    assert.equal((await server.api('GET', '/my-organization', { token: bob.token })).status, 404);
    assert.equal((await server.api('POST', `/my-organization/join-requests/${idOf(bob)}/approve`, { token: org.admin.token })).status, 409);
    assert.equal((await server.api('POST', `/my-organization/join-requests/${randomUUID()}/reject`, { token: org.admin.token })).status, 404);
    // A rejected clinician may ask again.
    assert.equal((await server.api('POST', `/organizations/${org.uuid}/join-request`, { token: bob.token })).status, 200);
    assert.deepEqual((await server.api('GET', '/my-organization/join-requests', { token: org.admin.token })).body.data.map((r: any) => r.user.uuid), [bob.uuid]);
  });

  test("tenant isolation: one organization's admin cannot see or decide another's join requests", async () => {
    const [a, b] = await Promise.all([orgWithAdmin(server), orgWithAdmin(server)]);
    const u = await registerUser(server);
    await server.api('POST', `/organizations/${b.uuid}/join-request`, { token: u.token });
    const bList = await server.api('GET', '/my-organization/join-requests', { token: b.admin.token });
    const requestId = bList.body.data[0].uuid as string;

    const aList = await server.api('GET', '/my-organization/join-requests', { token: a.admin.token });
    assert.deepEqual(aList.body.data, []);
    for (const action of ['approve', 'reject']) {
      const res = await server.api('POST', `/my-organization/join-requests/${requestId}/${action}`, { token: a.admin.token });
      assert.equal(res.status, 404, action);
    }
    const member = await memberOf(server, b);
    assert.equal((await server.api('GET', '/my-organization/join-requests', { token: member.token })).status, 403);
    assert.equal((await server.api('POST', `/my-organization/join-requests/${requestId}/approve`, { token: member.token })).status, 403);
    assert.equal((await server.api('GET', '/my-organization', { token: u.token })).status, 404, 'still pending');
  });

  test('being seated closes the clinician\'s other pending requests', async () => {
    const [a, b] = await Promise.all([orgWithAdmin(server), orgWithAdmin(server)]);
    const u = await registerUser(server);
    await server.api('POST', `/organizations/${a.uuid}/join-request`, { token: u.token });
    await server.api('POST', `/organizations/${b.uuid}/join-request`, { token: u.token });
    const id = (await server.api('GET', '/my-organization/join-requests', { token: a.admin.token })).body.data[0].uuid;
    assert.equal((await server.api('POST', `/my-organization/join-requests/${id}/approve`, { token: a.admin.token })).status, 200);
    assert.deepEqual((await server.api('GET', '/my-organization/join-requests', { token: b.admin.token })).body.data, []);
    const elsewhere = await server.api('POST', `/organizations/${b.uuid}/join-request`, { token: u.token });
    assert.equal(elsewhere.status, 409);
    assert.equal(elsewhere.body.code, 'already_in_organization');
  });

  test('leave: 404 without a seat; org_managed falls back to trial, active while an own purchase runs, else expired', async () => {
    const org = await orgWithAdmin(server);
    const solo = await registerUser(server);
    const notIn = await server.api('POST', '/my-organization/leave', { token: solo.token });
    assert.equal(notIn.status, 404);
    assert.equal(notIn.body.code, 'not_in_organization');

    const [inTrial, lapsed, paying] = await Promise.all([memberOf(server, org), memberOf(server, org), memberOf(server, org)]);
    for (const m of [inTrial, lapsed, paying]) assert.equal(await subscriptionOf(m.token), 'org_managed');
    const db = server.runtime.database.db;
    await db.update(users).set({ trialEndsAt: new Date(Date.now() - 86_400_000) }).where(eq(users.id, lapsed.uuid));
    await db.update(users).set({ trialEndsAt: new Date(Date.now() - 86_400_000) }).where(eq(users.id, paying.uuid));
    await db.insert(storePurchases).values({
      userId: paying.uuid,
      platform: 'google',
      storeKey: `token-${randomUUID()}`,
      productId: 'service_monthly',
      environment: 'production',
      expiresAt: new Date(Date.now() + 30 * 86_400_000),
      storeStateAt: new Date(),
    });

    const left = await server.api('POST', '/my-organization/leave', { token: inTrial.token });
    assert.equal(left.status, 200);
    assert.match(left.body.message, /now trial/);
    assert.equal(await subscriptionOf(inTrial.token), 'trial');
    assert.equal((await server.api('GET', '/my-organization', { token: inTrial.token })).status, 404);
    const config = await server.api('GET', '/my-organization/config', { token: inTrial.token });
    assert.equal(config.body.data.source, 'solo');

    assert.match((await server.api('POST', '/my-organization/leave', { token: lapsed.token })).body.message, /now expired/);
    assert.equal(await subscriptionOf(lapsed.token), 'expired');
    assert.match((await server.api('POST', '/my-organization/leave', { token: paying.token })).body.message, /now active/);
    assert.equal(await subscriptionOf(paying.token), 'active');

    const count = await server.api('GET', '/my-organization', { token: org.admin.token });
    assert.equal(count.body.data.member_count, 1);
  });

  test('the last admin may leave: the organization stays, without an admin, until an operator seats one', async () => {
    const org = await orgWithAdmin(server);
    const member = await memberOf(server, org);
    assert.equal((await server.api('POST', '/my-organization/leave', { token: org.admin.token })).status, 200);
    const shown = await operate(server, 'org.show', { organization: org.uuid });
    assert.equal(shown.status, 'active');
    assert.deepEqual(shown.members.map((m: any) => [m.uuid, m.role]), [[member.uuid, 'member']]);
    assert.equal((await server.api('GET', '/my-organization/join-requests', { token: member.token })).status, 403);
    await operate(server, 'org.set-admin', { organization: org.uuid, user: member.email });
    assert.equal((await server.api('GET', '/my-organization/join-requests', { token: member.token })).status, 200);
  });

  test('complete-onboarding with organization_uuid files a join request; 404 for an unknown organization', async () => {
    const org = await orgWithAdmin(server);
    const u = await registerUser(server);
    const unknown = await server.api('POST', '/complete-onboarding', { token: u.token, body: { discipline: 'PT', organization_uuid: randomUUID() } });
    assert.equal(unknown.status, 404);
    const profile = await server.api('GET', '/my-profile', { token: u.token });
    assert.equal(profile.body.data.needs_onboarding, true, 'nothing changed');

    const done = await server.api('POST', '/complete-onboarding', { token: u.token, body: { discipline: 'PT', organization_uuid: org.uuid } });
    assert.equal(done.status, 200);
    assert.equal(done.body.data.needs_onboarding, false);
    const mine = await server.api('GET', '/my-join-requests', { token: u.token });
    assert.deepEqual(mine.body.data.map((r: any) => r.organization_uuid), [org.uuid]);
    // Repeating onboarding neither fails nor duplicates the request.
    assert.equal((await server.api('POST', '/complete-onboarding', { token: u.token, body: { discipline: 'OT', organization_uuid: org.uuid } })).status, 200);
    assert.equal((await server.api('GET', '/my-join-requests', { token: u.token })).body.data.length, 1);
  });

  test('Idempotency-Key: a repeated join request answers the first response and files one request', async () => {
    const org = await orgWithAdmin(server);
    const u = await registerUser(server);
    const headers = { 'idempotency-key': `join-${randomUUID()}` };
    const first = await server.api('POST', `/organizations/${org.uuid}/join-request`, { token: u.token, headers });
    const second = await server.api('POST', `/organizations/${org.uuid}/join-request`, { token: u.token, headers });
    assert.equal(first.status, 200);
    assert.equal(second.status, 200, 'not the 409 a second request would get');
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(second.body, first.body);
    assert.equal((await server.api('GET', '/my-join-requests', { token: u.token })).body.data.length, 1);
    const withoutKey = await server.api('POST', `/organizations/${org.uuid}/join-request`, { token: u.token });
    assert.equal(withoutKey.status, 409);
  });
});
