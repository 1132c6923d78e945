/**
 * The subscription status rule (pure), and GET /subscription/status, loginData and the
 * profile agreeing with it as time passes; both stores unconfigured answer 422 and grant
 * nothing. On every backend.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { subscriptionStatusOf } from '@fieldchart/schema/api';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { memberOf, orgWithAdmin } from '../organizations/org-fixtures.ts';

const DAY = 86_400_000;

describe('subscriptionStatusOf', () => {
  const now = new Date('2026-06-01T12:00:00Z');
  const later = new Date(now.getTime() + DAY);
  const earlier = new Date(now.getTime() - DAY);
  test('a seat wins, then a running purchase, then a running trial, else expired', () => {
    assert.equal(subscriptionStatusOf({ trialEndsAt: earlier, purchase: null, seated: true, now }), 'org_managed');
    assert.equal(subscriptionStatusOf({ trialEndsAt: later, purchase: { expiresAt: later }, seated: true, now }), 'org_managed');
    assert.equal(subscriptionStatusOf({ trialEndsAt: later, purchase: { expiresAt: later }, seated: false, now }), 'active');
    assert.equal(subscriptionStatusOf({ trialEndsAt: earlier, purchase: { expiresAt: later }, seated: false, now }), 'active');
    assert.equal(subscriptionStatusOf({ trialEndsAt: later, purchase: { expiresAt: earlier }, seated: false, now }), 'trial');
    assert.equal(subscriptionStatusOf({ trialEndsAt: later, purchase: null, seated: false, now }), 'trial');
    assert.equal(subscriptionStatusOf({ trialEndsAt: earlier, purchase: { expiresAt: earlier }, seated: false, now }), 'expired');
    assert.equal(subscriptionStatusOf({ trialEndsAt: null, purchase: null, seated: false, now }), 'expired');
  });
  test('an end instant itself is no longer running', () => {
    assert.equal(subscriptionStatusOf({ trialEndsAt: now, purchase: null, seated: false, now }), 'expired');
    assert.equal(subscriptionStatusOf({ trialEndsAt: null, purchase: { expiresAt: now }, seated: false, now }), 'expired');
  });
});

forEachBackend('subscriptions: status, and no store configured', (backend) => {
  const clock = manualClock();
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend, { clock });
  });
  after(() => server?.close());

  const status = (token: string) => server.api('GET', '/subscription/status', { token });

  test('a new account is on trial until TRIAL_DAYS have passed, everywhere at once; then expired', async () => {
    const u = await registerUser(server);
    const s = await status(u.token);
    assert.equal(s.status, 200);
    assert.deepEqual(s.body.data, {
      subscription_status: 'trial',
      trial_ends_at: new Date(clock.now().getTime() + 14 * DAY).toISOString(),
      expires_at: null,
      product_id: null,
      platform: null,
    });
    clock.advance(14 * 86_400 + 1);
    try {
      // (The registration's access token has expired by now: sign in again.)
      const signIn = await server.api('POST', '/sign-in', { body: { email: u.email, password: u.password } });
      assert.equal(signIn.body.data.loginData.subscription_status, 'expired');
      const token = signIn.body.data.token as string;
      assert.equal((await status(token)).body.data.subscription_status, 'expired');
      assert.equal((await server.api('GET', '/my-profile', { token })).body.data.subscription_status, 'expired');
    } finally {
      clock.advance(-(14 * 86_400 + 1));
    }
    assert.equal((await status(u.token)).status, 200);
    assert.equal((await server.api('GET', '/subscription/status')).status, 401);
  });

  test('seated: org_managed; after leaving, the trial resumes while it runs', async () => {
    const org = await orgWithAdmin(server);
    const m = await memberOf(server, org);
    assert.equal((await status(m.token)).body.data.subscription_status, 'org_managed');
    assert.equal((await server.api('GET', '/my-profile', { token: m.token })).body.data.subscription_status, 'org_managed');
    const left = await server.api('POST', '/my-organization/leave', { token: m.token });
    assert.match(left.body.message, /now trial/);
    assert.equal((await status(m.token)).body.data.subscription_status, 'trial');
  });

  test('no store configured: 422 store_not_configured, never a grant', async () => {
    const u = await registerUser(server);
    for (const body of [
      { product_id: 'service_monthly', platform: 'apple', transaction_id: '2000000000000001' },
      { product_id: 'service_annual', platform: 'google', purchase_token: 'token-1' },
    ]) {
      const res = await server.api('POST', '/subscription/verify-receipt', { token: u.token, body });
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.equal(res.body.code, 'store_not_configured');
      assert.match(res.body.message, /no (App Store|Google Play) account is configured/);
    }
    assert.equal((await status(u.token)).body.data.subscription_status, 'trial');
    const apple = await server.api('POST', '/subscription/notifications/apple', { body: { signedPayload: 'a.b.c' } });
    assert.equal(apple.status, 422);
    assert.equal(apple.body.code, 'store_not_configured');
    const google = await server.api('POST', '/subscription/notifications/google', { body: { message: { data: '', messageId: '1' } } });
    assert.equal(google.status, 422);
  });
});
