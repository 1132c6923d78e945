/**
 * Google Play purchases end to end: POST /subscription/verify-receipt exchanges the service
 * account's JWT for an access token (cached), reads purchases.subscriptionsv2 from a local
 * Android Publisher stand-in, binds the purchase once and acknowledges it; real-time
 * developer notifications arrive as Pub/Sub pushes whose OIDC token is verified against a
 * Google JWKS stand-in, and the subscription is re-read from the API. On every backend.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { count, eq } from 'drizzle-orm';
import { storePurchases, users } from '@fieldchart/schema/db';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { startIdProvider, type IdProvider } from '../../helpers/id-provider.ts';
import { startGoogleStandIn, type GoogleStandIn } from '../../helpers/store-stand-ins.ts';
import { assertStalledStoreRefusesThenVerifies, STORE_TIMEOUT_MS } from './stalled-store.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';

const DAY = 86_400_000;
const PUSH_AUDIENCE = 'https://fieldchart.test/api/therapist/v1/subscription/notifications/google';
const PUSH_ACCOUNT = 'pubsub-push@fieldchart-test.iam.gserviceaccount.com';

forEachBackend('subscriptions: Google Play', (backend) => {
  let server: TestServer;
  let play: GoogleStandIn;
  let oidc: IdProvider;
  // Starts at the real time (the stand-ins sign with it) and moves only to expire the access token.
  const clock = manualClock();
  before(async () => {
    [play, oidc] = await Promise.all([startGoogleStandIn(), startIdProvider('google', PUSH_AUDIENCE)]);
    server = await startTestServer(backend, {
      clock,
      env: { ...play.env, STORE_TIMEOUT_MS: String(STORE_TIMEOUT_MS), GOOGLE_JWKS_URL: oidc.jwksUrl, GOOGLE_PUBSUB_AUDIENCE: PUSH_AUDIENCE, GOOGLE_PUBSUB_SERVICE_ACCOUNT: PUSH_ACCOUNT },
    });
  });
  after(async () => {
    await server?.close();
    await play?.close();
    await oidc?.close();
  });

  function purchase(overrides: Partial<Parameters<GoogleStandIn['setSubscription']>[1]> = {}): string {
    const token = `gp-${randomUUID()}.${randomUUID()}`;
    play.setSubscription(token, { productId: 'service_annual', expiryTime: new Date(Date.now() + 365 * DAY), ...overrides });
    return token;
  }
  const verify = (token: string, purchaseToken: string, productId = 'service_annual') =>
    server.api('POST', '/subscription/verify-receipt', { token, body: { product_id: productId, platform: 'google', purchase_token: purchaseToken } });
  const status = async (token: string) => (await server.api('GET', '/subscription/status', { token })).body.data;
  const pushToken = (claims: { aud?: string; email?: string; foreignKey?: boolean } = {}) =>
    oidc.sign({ sub: '1234567890', email: claims.email ?? PUSH_ACCOUNT, email_verified: true, ...(claims.aud ? { aud: claims.aud } : {}), ...(claims.foreignKey ? { foreignKey: true } : {}) });
  const push = async (body: unknown, bearer?: string) =>
    server.api('POST', '/subscription/notifications/google', { body, headers: bearer === undefined ? { authorization: `Bearer ${await pushToken()}` } : bearer ? { authorization: `Bearer ${bearer}` } : {} });

  test('a verified purchase is granted and acknowledged; the access token is exchanged once, reused, and renewed after it expires', async () => {
    const u = await registerUser(server);
    const exchangesBefore = play.tokenExchanges();
    const t = purchase();
    const res = await verify(u.token, t);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const s = await status(u.token);
    assert.equal(s.subscription_status, 'active');
    assert.equal(s.platform, 'google');
    assert.equal(s.product_id, 'service_annual');
    assert.ok(play.acknowledged.includes(`service_annual/${t}`), 'the purchase was acknowledged');

    const v = await registerUser(server);
    const t2 = purchase({ productId: 'service_monthly', acknowledged: true });
    assert.equal((await verify(v.token, t2, 'service_monthly')).status, 200);
    assert.ok(!play.acknowledged.some((a) => a.endsWith(`/${t2}`)), 'an acknowledged purchase is not acknowledged again');
    // Two verifications, three API calls (get, acknowledge, get): one token exchange.
    assert.equal(exchangesBefore, 0);
    assert.equal(play.tokenExchanges(), 1);
    // An hour later the token (expires_in 3599) is exchanged anew.
    clock.advance(3600);
    try {
      const w = await registerUser(server);
      assert.equal((await verify(w.token, purchase())).status, 200);
      assert.equal(play.tokenExchanges(), 2);
    } finally {
      clock.advance(-3600);
    }
    const signIn = await server.api('POST', '/sign-in', { body: { email: v.email, password: v.password } });
    assert.equal(signIn.body.data.loginData.subscription_status, 'active');
  });

  test('the same token again is 409; 20 concurrent submissions: one grant, one acknowledgement', async () => {
    const [a, b] = await Promise.all([registerUser(server), registerUser(server)]);
    const t = purchase();
    assert.equal((await verify(a.token, t)).status, 200);
    const again = await verify(b.token, t);
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'receipt_already_processed');
    assert.equal((await status(b.token)).subscription_status, 'trial');

    const crowd = await Promise.all(Array.from({ length: 5 }, () => registerUser(server)));
    const t2 = purchase();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => verify(crowd[i % crowd.length]!.token, t2)));
    assert.deepEqual(answers.map((r) => r.status).sort(), [200, ...Array(19).fill(409)], JSON.stringify(answers.map((r) => r.body.code)));
    assert.equal(play.acknowledged.filter((x) => x.endsWith(`/${t2}`)).length, 1);
    const bound = await server.runtime.database.db.select({ n: count() }).from(storePurchases).where(eq(storePurchases.storeKey, t2));
    assert.equal(Number(bound[0]?.n), 1);
  });

  test('a stalled Google: 503 store_unavailable within STORE_TIMEOUT_MS, nothing granted; the same purchase verifies once it answers again', async () => {
    const u = await registerUser(server);
    const t = purchase();
    await assertStalledStoreRefusesThenVerifies({
      stall: play.stall,
      verify: () => verify(u.token, t),
      subscriptionStatus: async () => (await status(u.token)).subscription_status,
    });
  });

  test('422: wrong product, expired, on hold, unknown token, missing token; nothing granted', async () => {
    const u = await registerUser(server);
    const expectInvalid = async (res: Awaited<ReturnType<typeof verify>>, code: string) => {
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.equal(res.body.code, code);
    };
    await expectInvalid(await verify(u.token, purchase(), 'service_monthly'), 'product_mismatch');
    await expectInvalid(await verify(u.token, purchase({ expiryTime: new Date(Date.now() - DAY), state: 'SUBSCRIPTION_STATE_EXPIRED' })), 'receipt_expired');
    await expectInvalid(await verify(u.token, purchase({ state: 'SUBSCRIPTION_STATE_ON_HOLD' })), 'receipt_expired');
    await expectInvalid(await verify(u.token, `unknown-${randomUUID()}`), 'invalid_receipt');
    const missing = await server.api('POST', '/subscription/verify-receipt', { token: u.token, body: { product_id: 'service_annual', platform: 'google', transaction_id: '1' } });
    assert.equal(missing.status, 422);
    assert.ok(missing.body.errors.purchase_token);
    assert.equal((await status(u.token)).subscription_status, 'trial');
  });

  test('notifications re-read the subscription: renewal, expiry, revocation; a redelivery changes nothing', async () => {
    const u = await registerUser(server);
    const t = purchase();
    assert.equal((await verify(u.token, t)).status, 200);

    const renewedUntil = new Date(Date.now() + 730 * DAY);
    play.setSubscription(t, { productId: 'service_annual', expiryTime: renewedUntil, acknowledged: true });
    const lookups = play.lookups();
    const renewed = await push(play.push({ purchaseToken: t, notificationType: 2 }));
    assert.equal(renewed.status, 200, JSON.stringify(renewed.body));
    assert.equal(play.lookups(), lookups + 1, 'the state was fetched from the API');
    assert.equal((await status(u.token)).expires_at, renewedUntil.toISOString());

    // The store says the subscription lapsed (on hold): access ends now.
    play.setSubscription(t, { productId: 'service_annual', expiryTime: new Date(Date.now() - 1000), state: 'SUBSCRIPTION_STATE_ON_HOLD', acknowledged: true });
    assert.equal((await push(play.push({ purchaseToken: t, notificationType: 5 }))).status, 200);
    await server.runtime.database.db.update(users).set({ trialEndsAt: new Date(Date.now() - DAY) }).where(eq(users.id, u.uuid));
    assert.equal((await status(u.token)).subscription_status, 'expired');

    // Recovered, then refunded (SUBSCRIPTION_REVOKED): revoked stays revoked.
    play.setSubscription(t, { productId: 'service_annual', expiryTime: renewedUntil, acknowledged: true });
    assert.equal((await push(play.push({ purchaseToken: t, notificationType: 1 }))).status, 200);
    assert.equal((await status(u.token)).subscription_status, 'active');
    const revocation = play.push({ purchaseToken: t, notificationType: 12 });
    assert.equal((await push(revocation)).status, 200);
    assert.equal((await status(u.token)).subscription_status, 'expired');
    assert.equal((await push(play.push({ purchaseToken: t, notificationType: 2 }))).status, 200);
    assert.equal((await status(u.token)).subscription_status, 'expired', 'a later notice does not undo a refund');

    const again = await push(revocation);
    assert.equal(again.status, 200);
    assert.match(again.body.message, /duplicate/);
  });

  test('a push without a valid Google OIDC token for our audience is refused and changes nothing', async () => {
    const u = await registerUser(server);
    const t = purchase();
    assert.equal((await verify(u.token, t)).status, 200);
    play.setSubscription(t, { productId: 'service_annual', expiryTime: new Date(Date.now() - 1000), state: 'SUBSCRIPTION_STATE_EXPIRED', acknowledged: true });
    const body = () => play.push({ purchaseToken: t, notificationType: 13 });
    for (const bearer of ['', 'not-a-jwt', await pushToken({ aud: 'https://elsewhere.test' }), await pushToken({ foreignKey: true }), await pushToken({ email: 'someone@else.test' })]) {
      const res = await push(body(), bearer);
      assert.equal(res.status, 401, `${bearer.slice(0, 12)}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.code, 'invalid_notification');
    }
    assert.equal((await status(u.token)).subscription_status, 'active');
    const otherApp = await push(play.push({ purchaseToken: t, notificationType: 13, packageName: 'com.other.app' }));
    assert.match(otherApp.body.message, /ignored/);
    const unknownToken = await push(play.push({ purchaseToken: `unknown-${randomUUID()}`, notificationType: 4 }));
    assert.equal(unknownToken.status, 200);
    assert.match(unknownToken.body.message, /ignored/);
    assert.equal((await push({ message: { data: Buffer.from('{}').toString('base64'), messageId: randomUUID() } })).status, 422);
    assert.equal((await status(u.token)).subscription_status, 'active');
  });
});
