/**
 * Operator operations for organizations and invitations, run in-process through
 * runOperation (the function both the CLI and the admin socket call), and the `fieldchart org`
 * / `fieldchart invitation` commands as a child process on the same database.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { forEachBackend, serverDataDir } from '../../helpers/backends.ts';
import { cliJson, runCli } from '../../helpers/processes.ts';
import { newAccount, registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { verifyEmail } from '../../helpers/verify-email.ts';
import { memberOf, operate, orgWithAdmin, uniqueName } from './org-fixtures.ts';

const rejects = async (p: Promise<unknown>, code: string) => {
  await assert.rejects(p, (err: { code?: string }) => {
    assert.equal(err.code, code);
    return true;
  });
};

forEachBackend('organizations: operator operations and CLI', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  const request = async (token: string, name: string, type = 'clinic') => {
    const res = await server.api('POST', '/organizations/request', { token, body: { name, type } });
    assert.equal(res.status, 200);
    return (await operate(server, 'org.list', { search: name })).items[0].uuid as string;
  };

  test('org.list filters by status and name; org.show tells seats, requests, invitations and claims', async () => {
    const org = await orgWithAdmin(server, { type: 'staffing_company' });
    const member = await memberOf(server, org);
    const asker = await registerUser(server);
    await server.api('POST', `/organizations/${org.uuid}/join-request`, { token: asker.token });
    await server.api('POST', '/my-organization/invitations', { token: org.admin.token, body: { email: newAccount().email } });

    const requested = await operate(server, 'org.list', { status: 'requested' });
    assert.ok(requested.items.every((o: any) => o.status === 'requested'));
    const byName = await operate(server, 'org.list', { search: org.name.toLowerCase() });
    assert.equal(byName.total, 1);
    assert.equal(byName.items[0].member_count, 2);
    assert.equal(byName.items[0].back_office_connected, false);

    const shown = await operate(server, 'org.show', { organization: org.name.toUpperCase() });
    assert.equal(shown.uuid, org.uuid);
    assert.deepEqual(
      shown.members.map((m: any) => [m.uuid, m.role]),
      [
        [org.admin.uuid, 'admin'],
        [member.uuid, 'member'],
      ],
    );
    assert.equal(shown.pending_join_requests, 1);
    assert.deepEqual(shown.invitations, { pending: 1 });
    assert.equal(shown.features.staffing_offers, true);
    assert.equal(shown.features.credential_sync, false);
    await rejects(operate(server, 'org.show', { organization: 'no such organization anywhere' }), 'organization_not_found');
  });

  test('org.approve: requested → active and listed, requester seated as admin; repeat is harmless; unclaimed is refused', async () => {
    const requester = await registerUser(server);
    const name = uniqueName('Approve Me');
    const uuid = await request(requester.token, name, 'hospital');
    const approved = await operate(server, 'org.approve', { organization: name });
    assert.equal(approved.status, 'active');
    assert.equal(approved.listed, true);
    assert.ok(approved.approved_at);
    assert.equal(approved.seated_admin, requester.uuid);
    const again = await operate(server, 'org.approve', { organization: uuid });
    assert.equal(again.status, 'active');
    assert.equal(again.seated_admin, null);

    // A requester who already sits elsewhere keeps that seat.
    const seated = await memberOf(server, await orgWithAdmin(server));
    const second = await request(seated.token, uniqueName('Second'));
    const approvedSecond = await operate(server, 'org.approve', { organization: second });
    assert.equal(approvedSecond.seated_admin, null);
    assert.equal(approvedSecond.member_count, 0);

    const inviter = await registerUser(server);
    const unclaimed = uniqueName('Unclaimed');
    await server.api('POST', '/organizations/invite', { token: inviter.token, body: { organization_name: unclaimed, contact_email: newAccount().email } });
    await rejects(operate(server, 'org.approve', { organization: unclaimed }), 'organization_unclaimed');
  });

  test('org.set-admin seats a user without a seat, promotes a member, refuses a seat elsewhere; names must be unambiguous', async () => {
    const org = await orgWithAdmin(server);
    const member = await memberOf(server, org);
    const promoted = await operate(server, 'org.set-admin', { organization: org.uuid, user: member.email });
    assert.equal(promoted.previous_role, 'member');
    assert.equal((await server.api('GET', '/my-organization', { token: member.token })).body.data.role, 'admin');

    const solo = await registerUser(server);
    const seated = await operate(server, 'org.set-admin', { organization: org.name, user: solo.uuid });
    assert.equal(seated.previous_role, null);
    assert.equal((await server.api('GET', '/my-profile', { token: solo.token })).body.data.subscription_status, 'org_managed');

    const elsewhere = await memberOf(server, await orgWithAdmin(server));
    await rejects(operate(server, 'org.set-admin', { organization: org.uuid, user: elsewhere.email }), 'already_in_organization');
    await rejects(operate(server, 'org.set-admin', { organization: org.uuid, user: 'nobody@example.test' }), 'user_not_found');

    const twin = uniqueName('Twin');
    await orgWithAdmin(server, { name: twin });
    await orgWithAdmin(server, { name: twin });
    await rejects(operate(server, 'org.show', { organization: twin }), 'ambiguous_organization');
  });

  test('invitation.list by organization and status', async () => {
    const [org, other] = await Promise.all([orgWithAdmin(server), orgWithAdmin(server)]);
    const invitee = await registerUser(server);
    await verifyEmail(server, invitee);
    await server.api('POST', '/my-organization/invitations', { token: org.admin.token, body: { email: invitee.email } });
    await server.api('POST', '/my-organization/invitations', { token: org.admin.token, body: { email: newAccount().email } });
    await server.api('POST', '/my-organization/invitations', { token: other.admin.token, body: { email: newAccount().email } });
    const uuid = (await server.api('GET', '/my-invitations', { token: invitee.token })).body.data[0].uuid;
    await server.api('POST', `/my-invitations/${uuid}/decline`, { token: invitee.token });

    const all = await operate(server, 'invitation.list', { organization: org.uuid });
    assert.equal(all.total, 2);
    assert.ok(all.items.every((i: any) => i.organization_uuid === org.uuid));
    const declined = await operate(server, 'invitation.list', { organization: org.name, status: 'declined' });
    assert.deepEqual(declined.items.map((i: any) => i.uuid), [uuid]);
    await assert.rejects(operate(server, 'invitation.list', { status: 'lost' }));
  });

  test('the CLI runs the same operations: org and invitation commands with --json', async () => {
    if (server.db.url) {
      // PostgreSQL: the CLI opens this test's own database.
      const env = { DATABASE_URL: server.db.url };
      const requester = await registerUser(server);
      const name = uniqueName('Cli Org');
      await server.api('POST', '/organizations/request', { token: requester.token, body: { name, type: 'staffing_company' } });
      const listed = await cliJson(['org', 'list', '--status', 'requested', '--search', name], env);
      assert.equal(listed.items.length, 1);
      const approved = await cliJson(['org', 'approve', name], env);
      assert.equal(approved.seated_admin, requester.uuid);
      const connected = await cliJson(['org', 'connect-back-office', listed.items[0].uuid], env);
      assert.equal(connected.back_office_connected, true);
      const config = await server.api('GET', '/my-organization/config', { token: requester.token });
      assert.equal(config.body.data.features.credential_sync, true);
      const solo = await registerUser(server);
      const admin = await cliJson(['org', 'set-admin', name, solo.email], env);
      assert.equal(admin.role, 'admin');
      await server.api('POST', '/my-organization/invitations', { token: requester.token, body: { email: newAccount().email } });
      const invitations = await cliJson(['invitation', 'list', '--organization', name], env);
      assert.equal(invitations.items.length, 1);
      const text = await runCli(['org', 'show', name], env);
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /credential_sync/);
      const missing = await runCli(['org', 'approve', 'nothing by this name'], env);
      assert.notEqual(missing.code, 0);
      assert.match(missing.stderr, /organization_not_found/);
    } else {
      // PGlite: the test database lives in this process, so the CLI gets a data dir of its own,
      // its database migrated and holding nothing.
      const dir = await serverDataDir('fieldchart-org-cli-', false);
      try {
        const env = { FIELDCHART_DATA_DIR: dir };
        assert.deepEqual(await cliJson(['org', 'list'], env), { total: 0, items: [] });
        const usage = await runCli(['invitation', 'list', '--status', 'bogus'], env);
        assert.notEqual(usage.code, 0);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  });
});
