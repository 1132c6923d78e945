/**
 * Caps on mail a caller can make the server send, on every backend: member invitations and
 * organization claims per sender and hour (ORGANIZATION_MAILS_PER_USER_PER_HOUR), and codes
 * requested from one client address per hour, invitation codes and reset codes together
 * (OTP_SENDS_PER_ADDRESS_PER_HOUR). 429 `too_many_attempts` with Retry-After; the window ends.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { newAccount, registerUser, startTestServer, type ApiResponse, type TestServer } from '../../helpers/test-server.ts';
import { orgWithAdmin } from './org-fixtures.ts';

function assertCapped(res: ApiResponse) {
  assert.equal(res.status, 429, JSON.stringify(res.body));
  assert.equal(res.body.code, 'too_many_attempts');
  assert.ok(Number(res.headers.get('retry-after')) >= 1);
}

forEachBackend('mail caps', (backend) => {
  const clock = manualClock(new Date('2026-11-23T09:00:00.000Z'));
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend, {
      clock,
      // Tokens outlive the hours the clock is moved on.
      env: { ORGANIZATION_MAILS_PER_USER_PER_HOUR: '2', OTP_SENDS_PER_ADDRESS_PER_HOUR: '3', ACCESS_TOKEN_TTL_SECONDS: '86400' },
    });
  });
  after(() => server.close());

  test('invitations and claims share one budget per sender and hour; refused ones use none; other senders are not affected', async () => {
    const org = await orgWithAdmin(server);
    const invite = (body: Record<string, unknown>, token = org.admin.token) => server.api('POST', '/my-organization/invitations', { token, body });
    assert.equal((await invite({ email: org.admin.email })).status, 422, 'a refused invitation mails nothing');
    assert.equal((await invite({ email: newAccount().email })).status, 200);
    const claim = await server.api('POST', '/organizations/invite', {
      token: org.admin.token,
      body: { organization_name: `Claimed ${Date.now()}`, contact_email: newAccount().email },
    });
    assert.equal(claim.status, 200, JSON.stringify(claim.body));
    const third = newAccount().email;
    assertCapped(await invite({ email: third }));
    assertCapped(
      await server.api('POST', '/organizations/invite', {
        token: org.admin.token,
        body: { organization_name: `Claimed again ${Date.now()}`, contact_email: newAccount().email },
      }),
    );
    const otherOrg = await orgWithAdmin(server);
    assert.equal((await invite({ email: newAccount().email }, otherOrg.admin.token)).status, 200);

    clock.advance(3601);
    assert.equal((await invite({ email: third })).status, 200);
  });

  test('codes requested from one address: invitation codes and reset codes count together', async () => {
    clock.advance(3601);
    const user = await registerUser(server);
    const bogus = { token: 'x'.repeat(43) };
    assert.equal((await server.api('POST', '/accept-invitation', { body: bogus })).status, 404);
    assert.equal((await server.api('POST', '/accept-invitation', { body: bogus })).status, 404);
    assert.equal((await server.api('POST', '/forgot-password/send-otp', { body: { email: user.email } })).status, 200);
    assertCapped(await server.api('POST', '/accept-invitation', { body: bogus }));
    assertCapped(await server.api('POST', '/forgot-password/send-otp', { body: { email: user.email } }));
    clock.advance(3601);
    assert.equal((await server.api('POST', '/accept-invitation', { body: bogus })).status, 404);
  });
});
