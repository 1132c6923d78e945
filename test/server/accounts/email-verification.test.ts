import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { mailedVerificationCode, verifyEmail } from '../../helpers/verify-email.ts';
import { assertError } from './support.ts';

forEachBackend('accounts: email verification', (backend) => {
  const clock = manualClock();
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend, { clock, env: { OTP_SENDS_PER_EMAIL_PER_HOUR: '3' } });
  });
  after(() => server?.close());

  const profile = async (token: string) => (await server.api('GET', '/my-profile', { token })).body.data;

  test('a new account is unverified; the mailed code verifies it; a second send is a 409', async () => {
    const u = await registerUser(server);
    assert.equal((await profile(u.token)).email_verified, false);
    await verifyEmail(server, u);
    assert.equal((await profile(u.token)).email_verified, true);
    assertError(await server.api('POST', '/verify-email/send-otp', { token: u.token }), 409, 'email_already_verified');
  });

  test('401 for a wrong, reused or expired code; burned after the allowed tries; 422 malformed', async () => {
    const u = await registerUser(server);
    let mark = server.mail.messages.length;
    assert.equal((await server.api('POST', '/verify-email/send-otp', { token: u.token })).status, 200);
    const code = await mailedVerificationCode(server, u.email, mark);
    const wrong = code === '000000' ? '111111' : '000000';
    for (let i = 0; i < 5; i++) assertError(await server.api('POST', '/verify-email/verify', { token: u.token, body: { otp: wrong } }), 401, 'invalid_otp');
    assertError(await server.api('POST', '/verify-email/verify', { token: u.token, body: { otp: code } }), 401, 'invalid_otp');
    assertError(await server.api('POST', '/verify-email/verify', { token: u.token, body: { otp: '12ab' } }), 422);

    mark = server.mail.messages.length;
    assert.equal((await server.api('POST', '/verify-email/send-otp', { token: u.token })).status, 200);
    const fresh = await mailedVerificationCode(server, u.email, mark);
    clock.advance(301);
    assertError(await server.api('POST', '/verify-email/verify', { token: u.token, body: { otp: fresh } }), 401, 'invalid_otp');
    assert.equal((await profile(u.token)).email_verified, false);
  });

  test('sends are limited per account (429 with Retry-After); 401 without a token', async () => {
    const u = await registerUser(server);
    for (let i = 0; i < 3; i++) assert.equal((await server.api('POST', '/verify-email/send-otp', { token: u.token })).status, 200);
    const limited = await server.api('POST', '/verify-email/send-otp', { token: u.token });
    assertError(limited, 429, 'too_many_attempts');
    assert.ok(Number(limited.headers.get('retry-after')) > 0);
    assertError(await server.api('POST', '/verify-email/send-otp'), 401);
    assertError(await server.api('POST', '/verify-email/verify', { body: { otp: '123456' } }), 401);
  });

  test('changing the email clears verification, and a code mailed to the old address no longer works', async () => {
    const u = await registerUser(server);
    await verifyEmail(server, u);
    const mark = server.mail.messages.length;
    const newEmail = `moved.${u.email}`;
    const changed = await server.api('PUT', '/update-basic-info', { token: u.token, body: { email: newEmail } });
    assert.equal(changed.status, 200);
    assert.equal(changed.body.data.email_verified, false);
    // Same address again: nothing changes.
    const same = await server.api('PUT', '/update-basic-info', { token: u.token, body: { email: newEmail, phone: '555-0101' } });
    assert.equal(same.body.data.email_verified, false);

    assert.equal((await server.api('POST', '/verify-email/send-otp', { token: u.token })).status, 200);
    const code = await mailedVerificationCode(server, newEmail, mark);
    await server.api('PUT', '/update-basic-info', { token: u.token, body: { email: `again.${u.email}` } });
    assertError(await server.api('POST', '/verify-email/verify', { token: u.token, body: { otp: code } }), 401, 'invalid_otp');
  });
});
