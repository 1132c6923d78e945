/**
 * Organization claims: a clinician invites an organization that is not on Fieldchart, its
 * contact gets a claim link (read out of the real SMTP message), previews it without signing
 * in, and claims it — or finds it expired on the manual clock.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { newAccount, registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { CLAIM_TTL_DAYS } from '../../../server/src/services/organizations/claims.ts';
import { fromMail, memberOf, operate, orgWithAdmin, uniqueName } from './org-fixtures.ts';

const CLAIM_LINK = /\/claim\/([A-Za-z0-9_-]{43})\b/;

forEachBackend('organizations: claims', (backend) => {
  let server: TestServer;
  const clock = manualClock();
  before(async () => {
    server = await startTestServer(backend, { clock, env: { APP_URL: 'https://app.fieldchart.test/' } });
  });
  after(() => server.close());

  const inviteOrg = (token: string, body: Record<string, unknown>) => server.api('POST', '/organizations/invite', { token, body });

  test('invite creates a private unlisted organization and mails the contact a claim link; the preview needs no token and shows no PHI', async () => {
    const inviter = await registerUser(server, { first_name: 'Priya' });
    const name = uniqueName('Lakeside Therapy');
    const contact = newAccount().email;
    const res = await inviteOrg(inviter.token, {
      organization_name: name,
      contact_email: contact,
      organization_type: 'private_practice',
      contact_name: 'Dana',
      message: 'We should document together.',
    });
    assert.equal(res.status, 200);
    const mail = await server.mail.waitFor(contact, (m) => /invited/.test(m.subject));
    assert.match(mail.text, /https:\/\/app\.fieldchart\.test\/claim\//);
    assert.match(mail.text, /Hi Dana/);
    assert.match(mail.text, /We should document together\./);
    const token = CLAIM_LINK.exec(mail.text)?.[1] ?? '';
    assert.ok(token);

    const search = await server.api('GET', `/organizations?search=${encodeURIComponent(name)}`, { token: inviter.token });
    assert.deepEqual(search.body.data, [], 'unclaimed organizations are private');
    const [row] = (await operate(server, 'org.list', { search: name })).items;
    assert.equal(row.status, 'unclaimed');
    assert.equal(row.listed, false);
    assert.equal(row.type, 'private_practice');

    const preview = await server.api('GET', `/organizations/claim/${token}`);
    assert.equal(preview.status, 200);
    assert.deepEqual(preview.body.data, { organization_name: name, inviter_first_name: 'Priya', expired: false });
    const unknown = await server.api('GET', `/organizations/claim/${'A'.repeat(43)}`);
    assert.equal(unknown.status, 404);
    assert.equal((await inviteOrg('', { organization_name: 'x', contact_email: contact })).status, 401);
  });

  test('a second open claim for the same organization name and contact is 422, whatever the case', async () => {
    const inviter = await registerUser(server);
    const name = uniqueName('Harbor Rehab');
    const contact = newAccount().email;
    assert.equal((await inviteOrg(inviter.token, { organization_name: name, contact_email: contact })).status, 200);
    const dup = await inviteOrg((await registerUser(server)).token, { organization_name: name.toUpperCase(), contact_email: contact.toUpperCase() });
    assert.equal(dup.status, 422);
    assert.equal(dup.body.code, 'claim_exists');
    assert.equal((await inviteOrg(inviter.token, { organization_name: name, contact_email: newAccount().email })).status, 200, 'another contact is fine');
    const bad = await inviteOrg(inviter.token, { organization_name: name, contact_email: 'nope', organization_type: 'moon_base' });
    assert.equal(bad.status, 422);
    assert.ok(bad.body.errors.contact_email && bad.body.errors.organization_type);
  });

  test('claiming lists the organization, seats the claimer as admin and the inviter as member, and mails both', async () => {
    const inviter = await registerUser(server);
    const claimer = await registerUser(server);
    const name = uniqueName('Valley Home Care');
    await inviteOrg(inviter.token, { organization_name: name, contact_email: claimer.email, organization_type: 'home_health_agency' });
    const token = await fromMail(server, claimer.email, /invited/, CLAIM_LINK);

    const claimed = await server.api('POST', '/organizations/claim', { token: claimer.token, body: { token } });
    assert.equal(claimed.status, 200, JSON.stringify(claimed.body));

    const mine = await server.api('GET', '/my-organization', { token: claimer.token });
    assert.equal(mine.body.data.name, name);
    assert.equal(mine.body.data.role, 'admin');
    assert.equal(mine.body.data.status, 'active');
    assert.equal(mine.body.data.listed, true);
    assert.equal(mine.body.data.member_count, 2);
    const inviterSeat = await server.api('GET', '/my-organization', { token: inviter.token });
    assert.equal(inviterSeat.body.data.uuid, mine.body.data.uuid);
    assert.equal(inviterSeat.body.data.role, 'member');

    const toClaimer = await server.mail.waitFor(claimer.email, (m) => /is on Fieldchart/.test(m.subject));
    assert.match(toClaimer.text, /you are its admin/);
    const toInviter = await server.mail.waitFor(inviter.email, (m) => /joined Fieldchart/.test(m.subject));
    assert.match(toInviter.text, /You are now a member/);

    const found = await server.api('GET', `/organizations?search=${encodeURIComponent(name)}`, { token: inviter.token });
    assert.equal(found.body.data.length, 1);
    assert.equal(found.body.data[0].role, 'member');

    // Consumed: 404 for the claim and for the preview.
    const again = await server.api('POST', '/organizations/claim', { token: (await registerUser(server)).token, body: { token } });
    assert.equal(again.status, 404);
    assert.equal((await server.api('GET', `/organizations/claim/${token}`)).status, 404);
    assert.equal((await server.api('POST', '/organizations/claim', { token: claimer.token, body: { token: 'unknown' } })).status, 404);
  });

  test('an inviter who found a seat meanwhile keeps it; a claimer already in an organization gets 422', async () => {
    const home = await orgWithAdmin(server);
    const inviter = await memberOf(server, home);
    const name = uniqueName('Bayview');
    const contact = await registerUser(server);
    await inviteOrg(inviter.token, { organization_name: name, contact_email: contact.email });
    const token = await fromMail(server, contact.email, /invited/, CLAIM_LINK);

    const seated = await memberOf(server, await orgWithAdmin(server));
    const refused = await server.api('POST', '/organizations/claim', { token: seated.token, body: { token } });
    assert.equal(refused.status, 422);
    assert.equal(refused.body.code, 'already_in_organization');

    assert.equal((await server.api('POST', '/organizations/claim', { token: contact.token, body: { token } })).status, 200);
    const stillHome = await server.api('GET', '/my-organization', { token: inviter.token });
    assert.equal(stillHome.body.data.uuid, home.uuid);
    const toInviter = await server.mail.waitFor(inviter.email, (m) => /joined Fieldchart/.test(m.subject));
    assert.match(toInviter.text, /already belong to an organization/);
    assert.equal((await server.api('GET', '/my-organization', { token: contact.token })).body.data.member_count, 1);
  });

  test(`an expired claim (after ${CLAIM_TTL_DAYS} days) previews as expired, is 422 to claim, and no longer blocks a new invite`, async () => {
    const inviter = await registerUser(server);
    const name = uniqueName('Old Mill Clinic');
    const contact = newAccount().email;
    await inviteOrg(inviter.token, { organization_name: name, contact_email: contact });
    const token = await fromMail(server, contact, /invited/, CLAIM_LINK);

    clock.advance(CLAIM_TTL_DAYS * 86_400 + 1);
    const preview = await server.api('GET', `/organizations/claim/${token}`);
    assert.equal(preview.status, 200);
    assert.equal(preview.body.data.expired, true);
    const claimer = await registerUser(server);
    const expired = await server.api('POST', '/organizations/claim', { token: claimer.token, body: { token } });
    assert.equal(expired.status, 422);
    assert.equal(expired.body.code, 'claim_expired');
    assert.equal((await server.api('GET', '/my-organization', { token: claimer.token })).status, 404);

    const again = await inviteOrg(claimer.token, { organization_name: name, contact_email: contact });
    assert.equal(again.status, 200);
  });
});
