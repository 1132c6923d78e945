/**
 * App Store purchases end to end: POST /subscription/verify-receipt fetches the transaction
 * from a local App Store Server API stand-in with the real library client, verifies its JWS
 * against a test root configured as trusted, and binds it once; App Store Server
 * Notifications v2, signed the same way, renew, expire and refund it. On every backend.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { count, eq } from 'drizzle-orm';
import { storePurchases, users } from '@fieldchart/schema/db';
import { forEachBackend } from '../../helpers/backends.ts';
import { createAppleChain, startAppleStandIn, type AppleChain, type AppleStandIn, type AppleTransaction } from '../../helpers/store-stand-ins.ts';
import { assertStalledStoreRefusesThenVerifies, STORE_TIMEOUT_MS } from './stalled-store.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { memberOf, orgWithAdmin } from '../organizations/org-fixtures.ts';

const DAY = 86_400_000;

forEachBackend('subscriptions: App Store', (backend) => {
  let server: TestServer;
  let apple: AppleStandIn;
  let untrusted: AppleChain;
  before(async () => {
    [apple, untrusted] = await Promise.all([startAppleStandIn(), createAppleChain()]);
    server = await startTestServer(backend, { env: { ...apple.env, STORE_TIMEOUT_MS: String(STORE_TIMEOUT_MS) } });
  });
  after(async () => {
    await server?.close();
    await apple?.close();
  });

  /** A subscription purchase the stand-in knows, running for `days` more days. */
  async function purchase(overrides: Partial<AppleTransaction> = {}, opts: { signer?: AppleChain } = {}): Promise<AppleTransaction> {
    const id = String(2_000_000_000_000 + Math.floor(Math.random() * 1e12));
    const t: AppleTransaction = { transactionId: id, originalTransactionId: id, productId: 'service_monthly', expiresDate: Date.now() + 30 * DAY, ...overrides };
    await apple.setTransaction(t, opts);
    return t;
  }
  const verify = (token: string, t: AppleTransaction, productId = t.productId) =>
    server.api('POST', '/subscription/verify-receipt', { token, body: { product_id: productId, platform: 'apple', transaction_id: t.transactionId } });
  const status = async (token: string) => (await server.api('GET', '/subscription/status', { token })).body.data;
  const endTrial = (userId: string) => server.runtime.database.db.update(users).set({ trialEndsAt: new Date(Date.now() - DAY) }).where(eq(users.id, userId));
  const notify = (signedPayload: string) => server.api('POST', '/subscription/notifications/apple', { body: { signedPayload } });

  test('a verified purchase makes the caller active with the store\'s expiry, product and platform', async () => {
    const u = await registerUser(server);
    assert.equal((await status(u.token)).subscription_status, 'trial');
    const t = await purchase();
    const res = await verify(u.token, t);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, true);
    const s = await status(u.token);
    assert.equal(s.subscription_status, 'active');
    assert.equal(s.expires_at, new Date(t.expiresDate).toISOString());
    assert.equal(s.product_id, 'service_monthly');
    assert.equal(s.platform, 'apple');
    assert.equal(typeof s.trial_ends_at, 'string');
    // Sign-in's loginData says the same.
    const signIn = await server.api('POST', '/sign-in', { body: { email: u.email, password: u.password } });
    assert.equal(signIn.body.data.loginData.subscription_status, 'active');
  });

  test('a stalled App Store: 503 store_unavailable within STORE_TIMEOUT_MS, nothing granted; the same purchase verifies once it answers again', async () => {
    const u = await registerUser(server);
    const t = await purchase();
    await assertStalledStoreRefusesThenVerifies({
      stall: apple.stall,
      verify: () => verify(u.token, t),
      subscriptionStatus: async () => (await status(u.token)).subscription_status,
    });
  });

  test('the same transaction again is 409, for the same user and for another one; nothing changes', async () => {
    const [a, b] = await Promise.all([registerUser(server), registerUser(server)]);
    const t = await purchase();
    assert.equal((await verify(a.token, t)).status, 200);
    const again = await verify(a.token, t);
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'receipt_already_processed');
    const other = await verify(b.token, t);
    assert.equal(other.status, 409);
    assert.equal((await status(b.token)).subscription_status, 'trial');
    // A renewal transaction of the same subscription is the same purchase.
    await apple.setTransaction({ ...t, transactionId: `${t.transactionId}1`, expiresDate: t.expiresDate + 30 * DAY });
    assert.equal((await verify(b.token, { ...t, transactionId: `${t.transactionId}1` })).status, 409);
  });

  test('20 concurrent submissions of one transaction: exactly one grant, 19 conflicts', async () => {
    const users = await Promise.all(Array.from({ length: 4 }, () => registerUser(server)));
    const t = await purchase();
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => verify(users[i % users.length]!.token, t)));
    const codes = answers.map((r) => r.status).sort();
    assert.deepEqual(codes, [200, ...Array(19).fill(409)], JSON.stringify(answers.map((r) => r.body.code)));
    const statuses = await Promise.all(users.map((u) => status(u.token)));
    assert.equal(statuses.filter((s) => s.subscription_status === 'active').length, 1);
    const bound = await server.runtime.database.db.select({ n: count() }).from(storePurchases).where(eq(storePurchases.storeKey, t.originalTransactionId));
    assert.equal(Number(bound[0]?.n), 1);
  });

  test('422: untrusted signature, wrong product, expired, refunded, unknown transaction, bad input; nothing granted', async () => {
    const u = await registerUser(server);
    const expectInvalid = async (res: Awaited<ReturnType<typeof verify>>, code: string) => {
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.equal(res.body.status, false);
      assert.equal(res.body.code, code);
    };
    await expectInvalid(await verify(u.token, await purchase({}, { signer: untrusted })), 'invalid_receipt');
    await expectInvalid(await verify(u.token, await purchase({ productId: 'service_annual' }), 'service_monthly'), 'product_mismatch');
    await expectInvalid(await verify(u.token, await purchase({ expiresDate: Date.now() - DAY })), 'receipt_expired');
    await expectInvalid(await verify(u.token, await purchase({ revocationDate: Date.now() - 1000 })), 'receipt_revoked');
    await expectInvalid(await verify(u.token, await purchase({ bundleId: 'com.someone.else' })), 'invalid_receipt');
    const unknown = await server.api('POST', '/subscription/verify-receipt', {
      token: u.token,
      body: { product_id: 'service_monthly', platform: 'apple', transaction_id: '999' },
    });
    await expectInvalid(unknown, 'invalid_receipt');
    const badProduct = await server.api('POST', '/subscription/verify-receipt', { token: u.token, body: { product_id: 'gold', platform: 'apple', transaction_id: '1' } });
    assert.equal(badProduct.status, 422);
    assert.ok(badProduct.body.errors.product_id);
    const missingId = await server.api('POST', '/subscription/verify-receipt', { token: u.token, body: { product_id: 'service_monthly', platform: 'apple' } });
    assert.equal(missingId.status, 422);
    assert.ok(missingId.body.errors.transaction_id);
    assert.equal((await server.api('POST', '/subscription/verify-receipt', { body: { product_id: 'service_monthly', platform: 'apple', transaction_id: '1' } })).status, 401);
    assert.equal((await status(u.token)).subscription_status, 'trial');
  });

  test('notifications: renewal extends, expiration ends, refund revokes, reversal restores; replays and stale news change nothing', async () => {
    const u = await registerUser(server);
    const t = await purchase();
    assert.equal((await verify(u.token, t)).status, 200);

    const renewed = { ...t, transactionId: `${t.transactionId}2`, expiresDate: t.expiresDate + 30 * DAY };
    const renewal = await apple.notification('DID_RENEW', renewed);
    const r1 = await notify(renewal);
    assert.equal(r1.status, 200, JSON.stringify(r1.body));
    assert.match(r1.body.message, /applied/);
    assert.equal((await status(u.token)).expires_at, new Date(renewed.expiresDate).toISOString());

    // Older news (signed before the renewal) does not roll the expiry back.
    const stale = await notify(await apple.notification('DID_RENEW', t, { signedDate: Date.now() - 60_000 }));
    assert.match(stale.body.message, /stale/);
    assert.equal((await status(u.token)).expires_at, new Date(renewed.expiresDate).toISOString());

    const refund = await apple.notification('REFUND', { ...renewed, revocationDate: Date.now() });
    assert.equal((await notify(refund)).status, 200);
    const refunded = await status(u.token);
    assert.equal(refunded.subscription_status, 'trial', 'a refund takes the purchase away; the trial still runs');
    assert.equal(refunded.expires_at, null);

    // The same notification again changes nothing, even after a later reversal.
    const reversal = await notify(await apple.notification('REFUND_REVERSED', renewed, { signedDate: Date.now() + 1000 }));
    assert.match(reversal.body.message, /applied/);
    assert.equal((await status(u.token)).subscription_status, 'active');
    const replay = await notify(refund);
    assert.equal(replay.status, 200);
    assert.match(replay.body.message, /duplicate/);
    assert.equal((await status(u.token)).subscription_status, 'active');

    const expired = await notify(await apple.notification('EXPIRED', { ...renewed, expiresDate: Date.now() - 1000 }, { signedDate: Date.now() + 2000, subtype: 'VOLUNTARY' }));
    assert.equal(expired.status, 200);
    await endTrial(u.uuid);
    assert.equal((await status(u.token)).subscription_status, 'expired');
  });

  test('a notification not signed by the trusted chain is refused and believed in nothing', async () => {
    const u = await registerUser(server);
    const t = await purchase();
    assert.equal((await verify(u.token, t)).status, 200);
    const forged = await notify(await apple.notification('REFUND', { ...t, revocationDate: Date.now() }, { signer: untrusted, signedDate: Date.now() + 5000 }));
    assert.equal(forged.status, 401);
    assert.equal(forged.body.code, 'invalid_notification');
    const garbage = await notify('not.a.jws');
    assert.equal(garbage.status, 401);
    assert.equal((await server.api('POST', '/subscription/notifications/apple', { body: {} })).status, 422);
    assert.equal((await status(u.token)).subscription_status, 'active');
    // A notification about a purchase nobody bound is accepted and ignored.
    const stray = await notify(await apple.notification('SUBSCRIBED', await purchase(), { uuid: randomUUID() }));
    assert.match(stray.body.message, /unknown_purchase/);
  });

  test('leaving an organization: active while the own purchase runs', async () => {
    const org = await orgWithAdmin(server);
    const m = await memberOf(server, org);
    const t = await purchase();
    assert.equal((await verify(m.token, t)).status, 200);
    assert.equal((await status(m.token)).subscription_status, 'org_managed');
    await endTrial(m.uuid);
    const left = await server.api('POST', '/my-organization/leave', { token: m.token });
    assert.match(left.body.message, /now active/);
    const s = await status(m.token);
    assert.equal(s.subscription_status, 'active');
    assert.equal(s.platform, 'apple');
  });
});
