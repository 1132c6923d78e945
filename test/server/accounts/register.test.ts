import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { newAccount, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { assertError, assertOk, assertTokenWorks, errorFields, freshEmail, query, signIn, usersWithEmail } from './support.ts';

const DAY = 86_400_000;

forEachBackend('accounts: register', (backend) => {
  // The manual clock does not move in this file: trial dates can be compared exactly.
  const clock = manualClock();
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend, { clock });
  });
  after(() => server?.close());

  const register = (body: unknown) => server.api('POST', '/register', { body });

  test('creates a trial account that needs onboarding and answers a working token pair', async () => {
    const email = freshEmail('New.Person');
    const account = newAccount({ email: `  ${email.toUpperCase()}  `, first_name: 'Ada', last_name: 'Nwosu' });
    const res = await register(account);
    assertOk(res);
    const d = res.body.data;
    assert.equal(typeof d.token, 'string');
    assert.equal(typeof d.refresh_token, 'string');
    assert.equal(d.expires_in, 3600);
    assert.equal(d.needs_onboarding, true);
    const trialEnds = new Date(clock.now().getTime() + 14 * DAY).toISOString();
    assert.equal(d.user.email, email.toLowerCase(), 'stored trimmed and lower-cased');
    assert.equal(d.user.first_name, 'Ada');
    assert.equal(d.user.last_name, 'Nwosu');
    assert.equal(d.user.subscription_status, 'trial');
    assert.equal(d.user.trial_ends_at, trialEnds);
    assert.equal(d.user.needs_onboarding, true);
    assert.equal(d.user.has_password, true);
    assert.deepEqual(d.user.linked_providers, []);
    assert.match(d.user.uuid, /^[0-9a-f-]{36}$/);
    assert.equal('password_hash' in d.user || 'passwordHash' in d.user, false, 'no hash in the profile');

    await assertTokenWorks(server, d.token, d.user.uuid);
    const again = await signIn(server, email, account.password);
    assertOk(again);
    assert.equal(again.body.data.loginData.uuid, d.user.uuid);
    assert.equal(again.body.data.loginData.subscription_status, 'trial');
    assert.equal(again.body.data.trial_ends_at, trialEnds);
    assert.equal(again.body.data.needs_onboarding, true);
  });

  test('the stored password hash is argon2id with the pinned parameters (m=19456, t=2, p=1)', async () => {
    const account = newAccount();
    assertOk(await register(account));
    const rows = await query<{ hash: string | null }>(
      server,
      sql`select password_hash as hash from users where email = ${account.email.toLowerCase()}`,
    );
    assert.equal(rows.length, 1);
    // PHC string: $argon2id$v=19$<params>$<salt>$<hash>. node-argon2 writes the parameters as
    // m,p,t (not the reference m,t,p), so they are compared as a set.
    const [, type, version, params, salt, digest] = (rows[0]!.hash ?? '').split('$');
    assert.equal(type, 'argon2id');
    assert.equal(version, 'v=19');
    assert.deepEqual(params?.split(',').sort(), ['m=19456', 'p=1', 't=2']);
    assert.ok(salt && digest, 'salt and hash present');
  });

  test('422 for an email already registered, whatever its case', async () => {
    const first = newAccount();
    assertOk(await register(first));
    for (const email of [first.email, first.email.toUpperCase(), ` ${first.email.replace(/^./, (c) => c.toUpperCase())} `]) {
      const dup = await register(newAccount({ email }));
      assertError(dup, 422, 'email_taken');
      assert.deepEqual(errorFields(dup), ['email']);
    }
    assert.equal(await usersWithEmail(server, first.email), 1);
    // The first account's password still works: the duplicate changed nothing.
    assertOk(await signIn(server, first.email, first.password));
  });

  test('two registrations racing for one email: one account, the other a 422 (never a 500)', async () => {
    const email = freshEmail('race');
    const results = await Promise.all([register(newAccount({ email })), register(newAccount({ email: email.toUpperCase() }))]);
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 422], JSON.stringify(results.map((r) => r.body)));
    for (const r of results) if (r.status === 422) assertError(r, 422, 'email_taken');
    assert.equal(await usersWithEmail(server, email), 1);
  });

  test('422 for a password under 8 characters; exactly 8 is accepted', async () => {
    const weak = newAccount({ password: 'Ab1-xyz' });
    const res = await register(weak);
    assertError(res, 422, 'validation_failed');
    assert.ok(errorFields(res).includes('password'));
    assert.equal(await usersWithEmail(server, weak.email), 0);

    const eight = newAccount({ password: 'Ab1-wxyz' });
    assertOk(await register(eight));
  });

  test('422 when the confirmation does not match, without echoing the password', async () => {
    const a = newAccount({ password: 'Secret-Value-4711' });
    const res = await register({ ...a, password_confirmation: 'Secret-Value-4712' });
    assertError(res, 422, 'validation_failed');
    assert.deepEqual(errorFields(res), ['password_confirmation']);
    assert.doesNotMatch(JSON.stringify(res.body), /Secret-Value/);
    assert.equal(await usersWithEmail(server, a.email), 0);
  });

  test('422 naming every missing or invalid field', async () => {
    const empty = await register({});
    assertError(empty, 422, 'validation_failed');
    assert.deepEqual(errorFields(empty), ['email', 'first_name', 'last_name', 'password', 'password_confirmation']);

    const bad = await register({ ...newAccount(), email: 'not-an-email', first_name: '   ' });
    assertError(bad, 422);
    assert.deepEqual(errorFields(bad), ['email', 'first_name']);
  });

  test('long passwords are accepted whole: 64 and 1000 characters sign in, 1025 is refused', async () => {
    for (const length of [64, 1000]) {
      const password = `P4ss-${'x'.repeat(length - 10)}-end!`.slice(0, length);
      assert.equal(password.length, length);
      const a = newAccount({ password });
      assertOk(await register(a));
      assertOk(await signIn(server, a.email, password));
    }
    const tooLong = newAccount({ password: 'y'.repeat(1025) });
    const res = await register(tooLong);
    assertError(res, 422);
    assert.ok(errorFields(res).includes('password'));
  });

  test('no truncation: a password that differs only after character 72 does not sign in', async () => {
    const head = 'H'.repeat(72);
    const a = newAccount({ password: `${head}-the-real-tail` });
    assertOk(await register(a));
    assertError(await signIn(server, a.email, `${head}-another-tail`), 401, 'invalid_credentials');
    assertError(await signIn(server, a.email, head), 401, 'invalid_credentials');
    assertOk(await signIn(server, a.email, a.password));
  });
});
