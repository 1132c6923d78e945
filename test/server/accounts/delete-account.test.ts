import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { forEachBackend } from '../../helpers/backends.ts';
import { startIdProvider, type IdProvider } from '../../helpers/id-provider.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import {
  assertError,
  assertOk,
  assertTokenRefused,
  assertTokenWorks,
  countRows,
  errorFields,
  freshEmail,
  query,
  refresh,
  resetCode,
  mailMark,
  signIn,
  signedIn,
} from './support.ts';

const AUD = 'google-client-ios';

/** Rows anywhere that belong to the user or the address. */
async function footprint(server: TestServer, userId: string, email: string, sessionIds: string[]) {
  const ids = sessionIds.length ? sessionIds : ['00000000-0000-0000-0000-000000000000'];
  const idList = sql.join(ids.map((id) => sql`${id}::uuid`), sql`, `);
  return {
    users: await countRows(server, sql`select count(*)::int as n from users where id = ${userId}::uuid or email = ${email}`),
    sessions: await countRows(server, sql`select count(*)::int as n from sessions where user_id = ${userId}::uuid`),
    refresh_tokens: await countRows(server, sql`select count(*)::int as n from refresh_tokens where session_id in (${idList})`),
    user_identities: await countRows(server, sql`select count(*)::int as n from user_identities where user_id = ${userId}::uuid`),
    password_resets: await countRows(server, sql`select count(*)::int as n from password_resets where user_id = ${userId}::uuid`),
    mail_outbox: await countRows(server, sql`select count(*)::int as n from mail_outbox where to_address = ${email}`),
    idempotency_keys: await countRows(server, sql`select count(*)::int as n from idempotency_keys where scope = ${`user:${userId}`}`),
  };
}

async function sessionIdsOf(server: TestServer, userId: string): Promise<string[]> {
  const rows = await query<{ id: string }>(server, sql`select id::text as id from sessions where user_id = ${userId}::uuid`);
  return rows.map((r) => r.id);
}

forEachBackend('accounts: delete account', (backend) => {
  let google: IdProvider;
  let server: TestServer;
  before(async () => {
    google = await startIdProvider('google', AUD);
    server = await startTestServer(backend, { env: { GOOGLE_CLIENT_IDS: AUD, GOOGLE_JWKS_URL: google.jwksUrl } });
  });
  after(async () => {
    await server?.close();
    await google?.close();
  });

  const deleteAccount = (token: string, body: unknown) => server.api('POST', '/delete-account', { token, body });

  test('401 for a wrong password, 422 without one; the account survives', async () => {
    const u = await registerUser(server);
    assertError(await deleteAccount(u.token, { password: `${u.password}x` }), 401, 'invalid_password');
    const missing = await deleteAccount(u.token, {});
    assertError(missing, 422);
    assert.deepEqual(errorFields(missing), ['password']);
    const empty = await deleteAccount(u.token, { password: '' });
    assertError(empty, 422);
    assert.deepEqual(errorFields(empty), ['password']);
    await assertTokenWorks(server, u.token, u.uuid);
    assertOk(await signIn(server, u.email, u.password));
  });

  test('success removes the account and everything keyed to it; the email can register again', async () => {
    const u = await registerUser(server);
    const second = await signedIn(server, u.email, u.password);
    assertOk(await refresh(server, second.refreshToken)); // a retired and a live refresh token
    const mark = mailMark(server);
    assertOk(await server.api('POST', '/forgot-password/send-otp', { body: { email: u.email } }));
    await resetCode(server, u.email, mark);
    // A stored idempotent response of this user (it holds their profile).
    assertOk(
      await server.api('PUT', '/update-basic-info', { token: u.token, body: { phone: '555-0100' }, headers: { 'idempotency-key': 'delete-me' } }),
    );
    const sessionIds = await sessionIdsOf(server, u.uuid);

    const before = await footprint(server, u.uuid, u.email, sessionIds);
    assert.equal(before.users, 1);
    assert.ok(before.sessions >= 2 && before.refresh_tokens >= 3 && before.password_resets >= 1 && before.mail_outbox >= 1 && before.idempotency_keys === 1, JSON.stringify(before));

    const res = await deleteAccount(u.token, { password: u.password });
    assertOk(res);
    assert.equal(typeof res.body.message, 'string');

    assert.deepEqual(await footprint(server, u.uuid, u.email, sessionIds), {
      users: 0,
      sessions: 0,
      refresh_tokens: 0,
      user_identities: 0,
      password_resets: 0,
      mail_outbox: 0,
      idempotency_keys: 0,
    });
    await assertTokenRefused(server, u.token);
    await assertTokenRefused(server, second.token);
    assertError(await refresh(server, u.refreshToken), 401, 'invalid_token');
    assertError(await signIn(server, u.email, u.password), 401, 'invalid_credentials');
    assertError(await server.api('POST', '/forgot-password/send-otp', { body: { email: u.email } }), 404, 'email_not_found');

    const again = await registerUser(server, { email: u.email, password: u.password });
    assert.notEqual(again.uuid, u.uuid);
    await assertTokenWorks(server, again.token, again.uuid);
  });

  test('a social-only account confirms with provider + id_token of its own identity', async () => {
    const sub = `delete-me-${Math.random().toString(36).slice(2)}`;
    const email = freshEmail('social');
    const reg = await server.api('POST', '/register/social', {
      body: { provider: 'google', id_token: await google.sign({ sub, email, email_verified: true }), email, first_name: 'Kai', last_name: 'Lund' },
    });
    assertOk(reg);
    const { token, user } = reg.body.data as { token: string; user: { uuid: string } };
    assert.equal(await countRows(server, sql`select count(*)::int as n from user_identities where user_id = ${user.uuid}::uuid`), 1);

    // No password to give: it needs the ID token.
    const withPassword = await deleteAccount(token, { password: 'whatever-password' });
    assertError(withPassword, 422);
    assert.deepEqual(errorFields(withPassword), ['id_token']);
    // An ID token of another identity does not confirm.
    const otherIdentity = await deleteAccount(token, { provider: 'google', id_token: await google.sign({ sub: `${sub}-other`, email }) });
    assertError(otherIdentity, 401, 'invalid_id_token');
    assertError(await deleteAccount(token, { provider: 'google', id_token: 'garbage' }), 401, 'invalid_id_token');
    await assertTokenWorks(server, token, user.uuid);

    const sessionIds = await sessionIdsOf(server, user.uuid);
    assertOk(await deleteAccount(token, { provider: 'google', id_token: await google.sign({ sub, email }) }));
    assert.deepEqual(await footprint(server, user.uuid, email, sessionIds), {
      users: 0,
      sessions: 0,
      refresh_tokens: 0,
      user_identities: 0,
      password_resets: 0,
      mail_outbox: 0,
      idempotency_keys: 0,
    });
    await assertTokenRefused(server, token);
    const signInAgain = await server.api('POST', '/sign-in/social', {
      body: { provider: 'google', id_token: await google.sign({ sub, email, email_verified: true }), email, first_name: 'Kai', last_name: 'Lund' },
    });
    assertError(signInAgain, 401, 'account_not_found');
  });
});
