import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import {
  assertError,
  assertOk,
  assertTokenRefused,
  assertTokenWorks,
  errorFields,
  mailMark,
  refresh,
  signIn,
  signedIn,
} from './support.ts';

const NEW_PASSWORD = 'Changed-passphrase-42';

forEachBackend('accounts: sessions', (backend) => {
  const clock = manualClock();
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend, { clock });
  });
  after(() => server?.close());

  describe('POST /token/refresh', () => {
    test('answers a new working pair and retires the old refresh token', async () => {
      const u = await registerUser(server);
      const res = await refresh(server, u.refreshToken);
      assertOk(res);
      const d = res.body.data;
      assert.deepEqual(Object.keys(d).sort(), ['expires_in', 'refresh_token', 'token']);
      assert.equal(d.expires_in, 3600);
      assert.notEqual(d.token, u.token);
      assert.notEqual(d.refresh_token, u.refreshToken);
      await assertTokenWorks(server, d.token, u.uuid);
      // Chained refreshes keep working.
      const next = await refresh(server, d.refresh_token);
      assertOk(next);
      await assertTokenWorks(server, next.body.data.token, u.uuid);
    });

    test('a retired refresh token presented again is a 401 and revokes its whole family', async () => {
      const u = await registerUser(server);
      const other = await signedIn(server, u.email, u.password);
      const first = await refresh(server, u.refreshToken);
      assertOk(first);
      const second = await refresh(server, first.body.data.refresh_token);
      assertOk(second);
      const newest = second.body.data as { token: string; refresh_token: string };
      await assertTokenWorks(server, newest.token);

      // The leaked first token comes back.
      assertError(await refresh(server, u.refreshToken), 401, 'refresh_token_reused');
      await assertTokenRefused(server, newest.token);
      await assertTokenRefused(server, u.token);
      assertError(await refresh(server, newest.refresh_token), 401, 'invalid_token');

      // The user's other session is not part of the family.
      await assertTokenWorks(server, other.token, u.uuid);
      const otherRefreshed = await refresh(server, other.refreshToken);
      assertOk(otherRefreshed);
      await assertTokenWorks(server, otherRefreshed.body.data.token, u.uuid);
    });

    test('two refreshes racing with one token never both succeed', async () => {
      const u = await registerUser(server);
      const results = await Promise.all([refresh(server, u.refreshToken), refresh(server, u.refreshToken)]);
      const wins = results.filter((r) => r.status === 200);
      assert.ok(wins.length <= 1, `both refreshes succeeded: ${JSON.stringify(results.map((r) => r.body))}`);
      for (const r of results) if (r.status !== 200) assertError(r, 401);
    });

    test('422 without a refresh token, 401 for an unknown one', async () => {
      const missing = await server.api('POST', '/token/refresh', { body: {} });
      assertError(missing, 422, 'validation_failed');
      assert.deepEqual(errorFields(missing), ['refresh_token']);
      const empty = await server.api('POST', '/token/refresh', { body: { refresh_token: '' } });
      assertError(empty, 422);
      assert.deepEqual(errorFields(empty), ['refresh_token']);
      assertError(await refresh(server, 'not-a-refresh-token'), 401, 'invalid_token');
    });

    test('an expired access token is refused while its refresh token still renews the session', async () => {
      const u = await registerUser(server);
      clock.advance(3599);
      await assertTokenWorks(server, u.token, u.uuid);
      clock.advance(2);
      await assertTokenRefused(server, u.token);
      const res = await refresh(server, u.refreshToken);
      assertOk(res);
      await assertTokenWorks(server, res.body.data.token, u.uuid);
    });

    test('a session in use slides past the refresh lifetime and survives the hourly cleanup', async () => {
      const u = await registerUser(server);
      let refreshToken = u.refreshToken;
      for (let i = 0; i < 3; i++) {
        clock.advance(20 * 86_400); // 60 days in all: twice the 30-day refresh lifetime
        const r = await refresh(server, refreshToken);
        assertOk(r);
        refreshToken = r.body.data.refresh_token;
      }
      await server.runtime.services.maintenance.purgeExpired();
      const last = await refresh(server, refreshToken);
      assertOk(last);
      await assertTokenWorks(server, last.body.data.token, u.uuid);
    });

    test('an expired refresh token is refused', async () => {
      const u = await registerUser(server);
      clock.advance(30 * 86_400 + 1);
      assertError(await refresh(server, u.refreshToken), 401, 'invalid_token');
    });
  });

  describe('POST /logout', () => {
    test('revokes the session: its access and refresh tokens stop working, other sessions stay', async () => {
      const u = await registerUser(server);
      const other = await signedIn(server, u.email, u.password);
      const res = await server.api('POST', '/logout', { token: u.token });
      assertOk(res);
      assert.equal(typeof res.body.message, 'string');
      await assertTokenRefused(server, u.token);
      assertError(await server.api('POST', '/logout', { token: u.token }), 401, 'invalid_token');
      assertError(await refresh(server, u.refreshToken), 401, 'invalid_token');
      await assertTokenWorks(server, other.token, u.uuid);
    });

    test('logout with an expired token is a 401', async () => {
      const u = await registerUser(server);
      clock.advance(3601);
      assertError(await server.api('POST', '/logout', { token: u.token }), 401, 'invalid_token');
    });
  });

  describe('POST /change-password', () => {
    const change = (token: string, body: unknown) => server.api('POST', '/change-password', { token, body });

    test('401 for a wrong current password, 422 for a weak, mismatched or missing new one; nothing changes', async () => {
      const u = await registerUser(server);
      const wrong = await change(u.token, { current_password: `${u.password}x`, new_password: NEW_PASSWORD, new_password_confirmation: NEW_PASSWORD });
      assertError(wrong, 401, 'invalid_password');

      const weak = await change(u.token, { current_password: u.password, new_password: 'short', new_password_confirmation: 'short' });
      assertError(weak, 422, 'validation_failed');
      assert.deepEqual(errorFields(weak), ['new_password']);

      const mismatch = await change(u.token, { current_password: u.password, new_password: NEW_PASSWORD, new_password_confirmation: `${NEW_PASSWORD}?` });
      assertError(mismatch, 422);
      assert.deepEqual(errorFields(mismatch), ['new_password_confirmation']);

      const missing = await change(u.token, {});
      assertError(missing, 422);
      assert.deepEqual(errorFields(missing), ['current_password', 'new_password', 'new_password_confirmation']);

      await assertTokenWorks(server, u.token, u.uuid);
      assertOk(await signIn(server, u.email, u.password));
      assertError(await signIn(server, u.email, NEW_PASSWORD), 401, 'invalid_credentials');
    });

    test('success keeps the current session, revokes the others and mails a notice', async () => {
      const u = await registerUser(server, { first_name: 'Morgan' });
      const b = await signedIn(server, u.email, u.password);
      const c = await signedIn(server, u.email, u.password);
      const mark = mailMark(server);

      const res = await change(u.token, { current_password: u.password, new_password: NEW_PASSWORD, new_password_confirmation: NEW_PASSWORD });
      assertOk(res);
      assert.equal(typeof res.body.message, 'string');

      await assertTokenWorks(server, u.token, u.uuid);
      await assertTokenRefused(server, b.token);
      await assertTokenRefused(server, c.token);
      assertError(await refresh(server, b.refreshToken), 401, 'invalid_token');
      const renewed = await refresh(server, u.refreshToken);
      assertOk(renewed);
      await assertTokenWorks(server, renewed.body.data.token, u.uuid);

      assertError(await signIn(server, u.email, u.password), 401, 'invalid_credentials');
      assertOk(await signIn(server, u.email, NEW_PASSWORD));

      const mail = await server.mail.waitFor(u.email, (m) => server.mail.messages.indexOf(m) >= mark && /password was changed/i.test(m.subject));
      assert.match(mail.text, /Morgan/);
      assert.doesNotMatch(mail.text, new RegExp(NEW_PASSWORD), 'the mail does not carry the password');
    });
  });
});
