/**
 * Invitations: sending (admin only, one open per organization and email), the invitee's side
 * (/my-invitations, accept, decline), revoking, expiry on a manual clock, tenant isolation,
 * and account creation from an emailed link — token and code read out of the real SMTP
 * messages.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { newAccount, registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { verifyEmail } from '../../helpers/verify-email.ts';
import { INVITATION_TTL_DAYS } from '../../../server/src/services/organizations/invitations.ts';
import { fromMail, memberOf, orgWithAdmin } from './org-fixtures.ts';

const INVITE_LINK = /\/invite\/([A-Za-z0-9_-]{43})\b/;
const CODE = /\b(\d{6})\b/;

forEachBackend('organizations: invitations', (backend) => {
  let server: TestServer;
  const clock = manualClock();
  before(async () => {
    server = await startTestServer(backend, { clock, env: { APP_URL: 'https://app.fieldchart.test' } });
  });
  after(() => server.close());

  const invite = (token: string, body: Record<string, unknown>) => server.api('POST', '/my-organization/invitations', { token, body });
  const freshEmail = () => newAccount().email;
  /** In-app invitations are answered by owners who proved their address. */
  const verifiedUser = async () => {
    const u = await registerUser(server);
    await verifyEmail(server, u);
    return u;
  };

  test('an unverified address sees no invitation and cannot answer one (registered with it, or changed to it)', async () => {
    const org = await orgWithAdmin(server);
    const squatter = await registerUser(server);
    assert.equal((await invite(org.admin.token, { email: squatter.email, role: 'admin' })).status, 200);
    const mine = await server.api('GET', '/my-invitations', { token: squatter.token });
    assert.equal(mine.status, 200);
    assert.deepEqual(mine.body.data, []);
    const sent = await server.api('GET', '/my-organization/invitations', { token: org.admin.token });
    const inv = sent.body.data.find((i: { email: string }) => i.email === squatter.email).uuid as string;
    for (const action of ['accept', 'decline']) {
      const res = await server.api('POST', `/my-invitations/${inv}/${action}`, { token: squatter.token });
      assert.equal(res.status, 403, action);
      assert.equal(res.body.code, 'email_unverified');
    }
    // A verified clinician who moves their email onto the invited address loses the proof.
    const mover = await verifiedUser();
    const victim = freshEmail();
    assert.equal((await invite(org.admin.token, { email: victim })).status, 200);
    assert.equal((await server.api('PUT', '/update-basic-info', { token: mover.token, body: { email: victim } })).status, 200);
    assert.deepEqual((await server.api('GET', '/my-invitations', { token: mover.token })).body.data, []);
    // Proving the address opens it.
    await verifyEmail(server, squatter);
    assert.equal((await server.api('POST', `/my-invitations/${inv}/accept`, { token: squatter.token })).status, 200);
    assert.equal((await server.api('GET', '/my-organization', { token: squatter.token })).body.data.uuid, org.uuid);
  });

  test('only admins invite (403); an email with an account sees it under /my-invitations and may accept', async () => {
    const org = await orgWithAdmin(server);
    const member = await memberOf(server, org);
    const invitee = await verifiedUser();
    const denied = await invite(member.token, { email: invitee.email });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.code, 'not_organization_admin');
    assert.equal((await invite((await registerUser(server)).token, { email: invitee.email })).status, 403, 'no seat: 403 too');

    const sent = await invite(org.admin.token, { email: invitee.email.toUpperCase(), role: 'admin' });
    assert.equal(sent.status, 200);
    assert.equal(sent.body.status, true);
    const mail = await server.mail.waitFor(invitee.email, (m) => /^Join /.test(m.subject));
    assert.match(mail.text, new RegExp(org.name));
    assert.doesNotMatch(mail.text, /\/invite\//, 'an existing account gets no sign-up link');

    const mine = await server.api('GET', '/my-invitations', { token: invitee.token });
    assert.equal(mine.status, 200);
    assert.equal(mine.body.data.length, 1);
    const inv = mine.body.data[0];
    assert.equal(inv.status, 'pending');
    assert.equal(inv.role, 'admin');
    assert.equal(inv.email, invitee.email);
    assert.equal(inv.organization_uuid, org.uuid);
    assert.equal(typeof inv.uuid, 'string');

    // Not addressed to the caller: 404.
    const stranger = await verifiedUser();
    assert.equal((await server.api('POST', `/my-invitations/${inv.uuid}/accept`, { token: stranger.token })).status, 404);
    assert.equal((await server.api('POST', `/my-invitations/${inv.uuid}/decline`, { token: stranger.token })).status, 404);
    assert.equal((await server.api('POST', `/my-invitations/${randomUUID()}/accept`, { token: invitee.token })).status, 404);

    const accepted = await server.api('POST', `/my-invitations/${inv.uuid}/accept`, { token: invitee.token });
    assert.equal(accepted.status, 200);
    const seat = await server.api('GET', '/my-organization', { token: invitee.token });
    assert.equal(seat.body.data.uuid, org.uuid);
    assert.equal(seat.body.data.role, 'admin', 'seated with the invited role');
    assert.equal((await server.api('GET', '/my-profile', { token: invitee.token })).body.data.subscription_status, 'org_managed');
    assert.deepEqual((await server.api('GET', '/my-invitations', { token: invitee.token })).body.data, []);
    const again = await server.api('POST', `/my-invitations/${inv.uuid}/accept`, { token: invitee.token });
    assert.equal(again.status, 404, 'an accepted invitation is no longer open');

    const sentList = await server.api('GET', '/my-organization/invitations', { token: org.admin.token });
    assert.equal(sentList.status, 200);
    assert.deepEqual(sentList.body.data.map((i: any) => [i.uuid, i.status]), [[inv.uuid, 'accepted']]);
    assert.equal((await server.api('GET', '/my-organization/invitations', { token: member.token })).status, 403);
  });

  test('422: an open invitation exists, or the email belongs to a member of an organization', async () => {
    const [org, other] = await Promise.all([orgWithAdmin(server), orgWithAdmin(server)]);
    const email = freshEmail();
    assert.equal((await invite(org.admin.token, { email })).status, 200);
    const dup = await invite(org.admin.token, { email });
    assert.equal(dup.status, 422);
    assert.equal(dup.body.code, 'invitation_exists');
    assert.ok(dup.body.errors.email);
    // Another organization may invite the same address.
    assert.equal((await invite(other.admin.token, { email })).status, 200);

    const seatedElsewhere = await memberOf(server, other);
    const taken = await invite(org.admin.token, { email: seatedElsewhere.email });
    assert.equal(taken.status, 422);
    assert.equal(taken.body.code, 'email_in_organization');
    assert.match(taken.body.message, /another organization/);
    const own = await memberOf(server, org);
    assert.equal((await invite(org.admin.token, { email: own.email })).status, 422);

    const bad = await invite(org.admin.token, { email: 'not-an-email', role: 'owner' });
    assert.equal(bad.status, 422);
    assert.ok(bad.body.errors.email && bad.body.errors.role);
  });

  test('accept is 422 for a clinician already seated; decline closes the invitation', async () => {
    const [org, other] = await Promise.all([orgWithAdmin(server), orgWithAdmin(server)]);
    const invitee = await verifiedUser();
    await invite(org.admin.token, { email: invitee.email });
    await invite(other.admin.token, { email: invitee.email });
    const mine = (await server.api('GET', '/my-invitations', { token: invitee.token })).body.data;
    assert.equal(mine.length, 2);
    const fromOrg = mine.find((i: any) => i.organization_uuid === org.uuid).uuid;
    const fromOther = mine.find((i: any) => i.organization_uuid === other.uuid).uuid;

    assert.equal((await server.api('POST', `/my-invitations/${fromOrg}/accept`, { token: invitee.token })).status, 200);
    const second = await server.api('POST', `/my-invitations/${fromOther}/accept`, { token: invitee.token });
    assert.equal(second.status, 422);
    assert.equal(second.body.code, 'already_in_organization');
    const declined = await server.api('POST', `/my-invitations/${fromOther}/decline`, { token: invitee.token });
    assert.equal(declined.status, 200);
    const otherList = await server.api('GET', '/my-organization/invitations', { token: other.admin.token });
    assert.equal(otherList.body.data[0].status, 'declined');
    assert.equal((await server.api('POST', `/my-invitations/${fromOther}/decline`, { token: invitee.token })).status, 404);
  });

  test('revoke: admins only, 404 for another organization\'s invitation, 404 once closed', async () => {
    const [org, other] = await Promise.all([orgWithAdmin(server), orgWithAdmin(server)]);
    const invitee = await verifiedUser();
    await invite(org.admin.token, { email: invitee.email });
    const uuid = (await server.api('GET', '/my-organization/invitations', { token: org.admin.token })).body.data[0].uuid;

    const member = await memberOf(server, org);
    assert.equal((await server.api('DELETE', `/my-organization/invitations/${uuid}`, { token: member.token })).status, 403);
    const foreign = await server.api('DELETE', `/my-organization/invitations/${uuid}`, { token: other.admin.token });
    assert.equal(foreign.status, 404, "tenant isolation: another organization's invitation is not found");
    assert.deepEqual((await server.api('GET', '/my-organization/invitations', { token: other.admin.token })).body.data, []);
    assert.equal((await server.api('DELETE', `/my-organization/invitations/${randomUUID()}`, { token: org.admin.token })).status, 404);

    assert.equal((await server.api('DELETE', `/my-organization/invitations/${uuid}`, { token: org.admin.token })).status, 200);
    assert.equal((await server.api('DELETE', `/my-organization/invitations/${uuid}`, { token: org.admin.token })).status, 200, 'revoking twice is harmless');
    const list = await server.api('GET', '/my-organization/invitations', { token: org.admin.token });
    assert.equal(list.body.data[0].status, 'revoked');
    assert.deepEqual((await server.api('GET', '/my-invitations', { token: invitee.token })).body.data, []);
    assert.equal((await server.api('POST', `/my-invitations/${uuid}/accept`, { token: invitee.token })).status, 404);

    // A new invitation after a revoked one is fine; once accepted it cannot be revoked.
    await invite(org.admin.token, { email: invitee.email });
    const fresh = (await server.api('GET', '/my-invitations', { token: invitee.token })).body.data[0].uuid;
    await server.api('POST', `/my-invitations/${fresh}/accept`, { token: invitee.token });
    const closed = await server.api('DELETE', `/my-organization/invitations/${fresh}`, { token: org.admin.token });
    assert.equal(closed.status, 404);
    assert.equal(closed.body.code, 'invitation_not_open');
  });

  test(`sign-up from an emailed link: accept-invitation → code → invite-otp-verify → set-new-password seats the new account`, async () => {
    const org = await orgWithAdmin(server, { type: 'home_health_agency' });
    const email = freshEmail();
    assert.equal((await invite(org.admin.token, { email, first_name: 'Nora', last_name: 'Okafor' })).status, 200);
    const link = await server.mail.waitFor(email, (m) => /^Join /.test(m.subject));
    assert.match(link.text, /https:\/\/app\.fieldchart\.test\/invite\//, 'the link is built on APP_URL');
    const token = INVITE_LINK.exec(link.text)?.[1] ?? '';
    assert.ok(token.length >= 22, 'at least 128 bits');

    assert.equal((await server.api('POST', '/accept-invitation', { body: { token: 'x'.repeat(43) } })).status, 404);
    const opened = await server.api('POST', '/accept-invitation', { body: { token } });
    assert.equal(opened.status, 200);
    assert.deepEqual(opened.body.data, { email, organization_name: org.name });
    const code = await fromMail(server, email, /verification code/, CODE);

    const wrong = code === '000000' ? '111111' : '000000';
    const bad = await server.api('POST', '/invite-otp-verify', { body: { token, otp: wrong } });
    assert.equal(bad.status, 401);
    assert.equal(bad.body.code, 'invalid_otp');
    assert.equal((await server.api('POST', '/invite-otp-verify', { body: { token, otp: '12' } })).status, 422);
    const verified = await server.api('POST', '/invite-otp-verify', { body: { token, otp: code } });
    assert.equal(verified.status, 200);
    const id = verified.body.data.id as string;
    assert.equal(typeof id, 'string');
    assert.equal((await server.api('POST', '/invite-otp-verify', { body: { token, otp: code } })).status, 401, 'the code works once');

    const mismatch = await server.api('POST', '/set-new-password', { body: { token, id, password: 'long enough 1', password_confirmation: 'long enough 2' } });
    assert.equal(mismatch.status, 422);
    assert.ok(mismatch.body.errors.password_confirmation);
    const short = await server.api('POST', '/set-new-password', { body: { token, id, password: 'short', password_confirmation: 'short' } });
    assert.equal(short.status, 422);
    const wrongId = await server.api('POST', '/set-new-password', { body: { token, id: 'nope', password: 'long enough 1', password_confirmation: 'long enough 1' } });
    assert.equal(wrongId.status, 422);
    assert.ok(wrongId.body.errors.id);

    const created = await server.api('POST', '/set-new-password', { body: { token, id, password: 'long enough 1', password_confirmation: 'long enough 1' } });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const data = created.body.data;
    assert.equal(typeof data.token, 'string');
    assert.equal(typeof data.refresh_token, 'string');
    assert.equal(typeof data.expires_in, 'number');
    assert.equal(data.loginData.email, email);
    assert.equal(data.loginData.first_name, 'Nora');
    assert.equal(data.loginData.last_name, 'Okafor');
    assert.equal(data.loginData.subscription_status, 'org_managed');

    const seat = await server.api('GET', '/my-organization', { token: data.token });
    assert.equal(seat.status, 200);
    assert.equal(seat.body.data.uuid, org.uuid);
    assert.equal(seat.body.data.role, 'member');
    const signIn = await server.api('POST', '/sign-in', { body: { email, password: 'long enough 1' } });
    assert.equal(signIn.status, 200);
    const refreshed = await server.api('POST', '/token/refresh', { body: { refresh_token: data.refresh_token } });
    assert.equal(refreshed.status, 200);

    // Single use: the link is spent.
    assert.equal((await server.api('POST', '/accept-invitation', { body: { token } })).status, 404);
    assert.equal(
      (await server.api('POST', '/set-new-password', { body: { token, id, password: 'long enough 1', password_confirmation: 'long enough 1' } })).status,
      404,
    );
    const sent = await server.api('GET', '/my-organization/invitations', { token: org.admin.token });
    assert.equal(sent.body.data.find((i: any) => i.email === email).status, 'accepted');
  });

  test('the invitation code is burned after 5 wrong tries and expires after 5 minutes', async () => {
    const org = await orgWithAdmin(server);
    const email = freshEmail();
    await invite(org.admin.token, { email });
    const token = await fromMail(server, email, /^Join /, INVITE_LINK);

    await server.api('POST', '/accept-invitation', { body: { token } });
    const firstMail = await server.mail.waitFor(email, (m) => /verification code/.test(m.subject));
    const code = CODE.exec(firstMail.text)?.[1] ?? '';
    const wrong = code === '000000' ? '111111' : '000000';
    for (let i = 0; i < 5; i++) assert.equal((await server.api('POST', '/invite-otp-verify', { body: { token, otp: wrong } })).status, 401);
    assert.equal((await server.api('POST', '/invite-otp-verify', { body: { token, otp: code } })).status, 401, 'burned');

    // A new code replaces it; it expires after OTP_TTL_SECONDS.
    await server.api('POST', '/accept-invitation', { body: { token } });
    const secondMail = await server.mail.waitFor(email, (m) => /verification code/.test(m.subject) && m !== firstMail);
    const second = CODE.exec(secondMail.text)?.[1] ?? '';
    clock.advance(301);
    assert.equal((await server.api('POST', '/invite-otp-verify', { body: { token, otp: second } })).status, 401, 'expired');
  });

  test('an email that already has an account cannot use the sign-up flow (422)', async () => {
    const org = await orgWithAdmin(server);
    const email = freshEmail();
    await invite(org.admin.token, { email });
    const token = await fromMail(server, email, /^Join /, INVITE_LINK);
    await server.api('POST', '/accept-invitation', { body: { token } });
    const code = await fromMail(server, email, /verification code/, CODE);
    const id = (await server.api('POST', '/invite-otp-verify', { body: { token, otp: code } })).body.data.id;
    // Meanwhile the invitee registers on their own.
    await registerUser(server, { email });
    const res = await server.api('POST', '/set-new-password', { body: { token, id, password: 'long enough 1', password_confirmation: 'long enough 1' } });
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'email_taken');
    const reopened = await server.api('POST', '/accept-invitation', { body: { token } });
    assert.equal(reopened.status, 422);
  });

  test(`expiry: after ${INVITATION_TTL_DAYS} days a pending invitation reads as expired, its link is 404, and it no longer blocks a new one`, async () => {
    const org = await orgWithAdmin(server);
    const invitee = await verifiedUser();
    const email = freshEmail();
    await invite(org.admin.token, { email });
    await invite(org.admin.token, { email: invitee.email });
    const token = await fromMail(server, email, /^Join /, INVITE_LINK);
    const uuid = (await server.api('GET', '/my-invitations', { token: invitee.token })).body.data[0].uuid;

    clock.advance(INVITATION_TTL_DAYS * 86_400 + 1);
    // Tokens signed before the jump have expired with it: sign in again.
    const signIn = async (u: { email: string; password: string }) =>
      (await server.api('POST', '/sign-in', { body: { email: u.email, password: u.password } })).body.data.token as string;
    const [adminToken, inviteeToken] = await Promise.all([signIn(org.admin), signIn(invitee)]);

    const list = await server.api('GET', '/my-organization/invitations', { token: adminToken });
    assert.deepEqual(list.body.data.map((i: any) => i.status), ['expired', 'expired']);
    assert.deepEqual((await server.api('GET', '/my-invitations', { token: inviteeToken })).body.data, []);
    assert.equal((await server.api('POST', `/my-invitations/${uuid}/accept`, { token: inviteeToken })).status, 404);
    assert.equal((await server.api('POST', '/accept-invitation', { body: { token } })).status, 404);
    assert.equal((await server.api('DELETE', `/my-organization/invitations/${uuid}`, { token: adminToken })).status, 404);

    assert.equal((await invite(adminToken, { email })).status, 200, 'an expired invitation does not block a new one');
    const after = await server.api('GET', '/my-organization/invitations', { token: adminToken });
    assert.deepEqual(after.body.data.map((i: any) => i.status).sort(), ['expired', 'expired', 'pending']);
  });
});
