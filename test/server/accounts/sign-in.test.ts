import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { assertError, assertOk, assertTokenWorks, errorFields, freshEmail, signIn } from './support.ts';

const DAY = 86_400_000;
const WINDOW = 900;

forEachBackend('accounts: sign-in', (backend) => {
  describe('credentials and per-account throttle', () => {
    const clock = manualClock();
    let server: TestServer;
    before(async () => {
      server = await startTestServer(backend, {
        clock,
        env: { SIGNIN_FAILURES_PER_ACCOUNT: '3', SIGNIN_FAILURE_WINDOW_SECONDS: String(WINDOW) },
      });
    });
    after(() => server?.close());

    test('answers token, refresh_token, expires_in, loginData, trial_ends_at and needs_onboarding', async () => {
      const u = await registerUser(server, { first_name: 'Dana', last_name: 'Okafor' });
      // The address is matched trimmed and case-insensitively.
      const res = await signIn(server, `  ${u.email.toUpperCase()} `, u.password);
      assertOk(res);
      const d = res.body.data;
      assert.deepEqual(Object.keys(d).sort(), ['expires_in', 'loginData', 'needs_onboarding', 'refresh_token', 'token', 'trial_ends_at']);
      assert.equal(typeof d.token, 'string');
      assert.equal(d.token.split('.').length, 3, 'token is a JWT');
      assert.equal(typeof d.refresh_token, 'string');
      assert.ok(d.refresh_token.length >= 32);
      assert.equal(d.expires_in, 3600);
      assert.deepEqual(d.loginData, {
        uuid: u.uuid,
        first_name: 'Dana',
        last_name: 'Okafor',
        email: u.email.toLowerCase(),
        subscription_status: 'trial',
      });
      assert.equal(d.trial_ends_at, new Date(clock.now().getTime() + 14 * DAY).toISOString());
      assert.equal(d.needs_onboarding, true);
      assert.notEqual(d.token, u.token, 'each sign-in opens its own session');
      await assertTokenWorks(server, d.token, u.uuid);
      await assertTokenWorks(server, u.token, u.uuid);
    });

    test('401 for a wrong password and for an unknown email, with the same answer', async () => {
      const u = await registerUser(server);
      const wrong = await signIn(server, u.email, `${u.password}x`);
      assertError(wrong, 401, 'invalid_credentials');
      const unknown = await signIn(server, freshEmail('nobody'), u.password);
      assertError(unknown, 401, 'invalid_credentials');
      assert.equal(unknown.body.message, wrong.body.message, 'no hint whether the email exists');
      // A password that differs only in case is a different password.
      assertError(await signIn(server, u.email, u.password.toUpperCase()), 401, 'invalid_credentials');
    });

    test('422 when email or password is missing', async () => {
      const both = await server.api('POST', '/sign-in', { body: {} });
      assertError(both, 422, 'validation_failed');
      assert.deepEqual(errorFields(both), ['email', 'password']);

      const noPassword = await server.api('POST', '/sign-in', { body: { email: 'a@example.test' } });
      assertError(noPassword, 422);
      assert.deepEqual(errorFields(noPassword), ['password']);

      const noEmail = await server.api('POST', '/sign-in', { body: { password: 'whatever-long' } });
      assertError(noEmail, 422);
      assert.deepEqual(errorFields(noEmail), ['email']);

      const blank = await server.api('POST', '/sign-in', { body: { email: '   ', password: '' } });
      assertError(blank, 422);
      assert.deepEqual(errorFields(blank), ['email', 'password']);

      const wrongType = await server.api('POST', '/sign-in', { body: { email: 'a@example.test', password: 12345678 } });
      assertError(wrongType, 422);
      assert.deepEqual(errorFields(wrongType), ['password']);
    });

    test('failed sign-ins are throttled per account, with Retry-After, until the window passes', async () => {
      const u = await registerUser(server);
      const other = await registerUser(server);
      // Failures count together whatever the case of the address.
      for (const email of [u.email, u.email.toUpperCase(), ` ${u.email} `]) {
        assertError(await signIn(server, email, 'wrong-password-1'), 401, 'invalid_credentials');
      }
      const limited = await signIn(server, u.email, 'wrong-password-1');
      assertError(limited, 429, 'too_many_attempts');
      assert.equal(limited.headers.get('retry-after'), String(WINDOW));
      // The lock holds for the right password too, and from any claimed address.
      const right = await signIn(server, u.email, u.password, { 'x-forwarded-for': '203.0.113.9' });
      assertError(right, 429, 'too_many_attempts');
      // Another account at the same address is unaffected.
      assertOk(await signIn(server, other.email, other.password));

      clock.advance(WINDOW - 300);
      const later = await signIn(server, u.email, u.password);
      assertError(later, 429, 'too_many_attempts');
      assert.equal(later.headers.get('retry-after'), '300');

      clock.advance(301);
      assertOk(await signIn(server, u.email, u.password));
      // A success clears the account's count: the next failure is a plain 401 again.
      assertError(await signIn(server, u.email, 'wrong-password-2'), 401, 'invalid_credentials');
      assertOk(await signIn(server, u.email, u.password));
    });

    test('failures against an unknown email are throttled the same way', async () => {
      const email = freshEmail('ghost');
      for (let i = 0; i < 3; i++) assertError(await signIn(server, email, 'wrong-password-1'), 401, 'invalid_credentials');
      assertError(await signIn(server, email, 'wrong-password-1'), 429, 'too_many_attempts');
    });

    test('parallel wrong guesses cannot get past the per-account limit', async () => {
      const u = await registerUser(server);
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => signIn(server, u.email, `wrong-guess-${i}`)));
      const statuses = results.map((r) => r.status).sort();
      for (const r of results) assertError(r, r.status === 401 ? 401 : 429);
      assert.ok(statuses.filter((s) => s === 401).length <= 3, `at most 3 guesses were checked: ${statuses.join(',')}`);
      assertError(await signIn(server, u.email, u.password), 429, 'too_many_attempts');
    });
  });

  describe('per-address throttle', () => {
    const clock = manualClock();
    let server: TestServer;
    before(async () => {
      server = await startTestServer(backend, {
        clock,
        env: { SIGNIN_FAILURES_PER_ADDRESS: '3', SIGNIN_FAILURES_PER_ACCOUNT: '10', SIGNIN_FAILURE_WINDOW_SECONDS: String(WINDOW) },
      });
    });
    after(() => server?.close());

    test('failures across different emails from one address lead to 429 until the window passes', async () => {
      const u = await registerUser(server);
      assertError(await signIn(server, u.email, 'wrong-password-1'), 401, 'invalid_credentials');
      assertError(await signIn(server, freshEmail('a'), 'wrong-password-1'), 401, 'invalid_credentials');
      assertError(await signIn(server, freshEmail('b'), 'wrong-password-1'), 401, 'invalid_credentials');

      const limited = await signIn(server, freshEmail('c'), 'wrong-password-1');
      assertError(limited, 429, 'too_many_attempts');
      assert.equal(limited.headers.get('retry-after'), String(WINDOW));
      // Everyone at that address waits, even with the right password.
      assertError(await signIn(server, u.email, u.password), 429, 'too_many_attempts');
      // X-Forwarded-For is not trusted by default: claiming another address changes nothing.
      assertError(await signIn(server, u.email, u.password, { 'x-forwarded-for': '198.51.100.7' }), 429, 'too_many_attempts');

      clock.advance(WINDOW + 1);
      const ok = await signIn(server, u.email, u.password);
      assertOk(ok);
      await assertTokenWorks(server, ok.body.data.token, u.uuid);
    });
  });
});
