import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import {
  assertError,
  assertOk,
  assertTokenRefused,
  assertTokenWorks,
  countRows,
  errorFields,
  freshEmail,
  mailMark,
  mailSettled,
  otherCode,
  query,
  refresh,
  resetCode,
  signIn,
  signedIn,
} from './support.ts';

const PER_EMAIL = 3;
const PER_ADDRESS = 4;
const NEW_PASSWORD = 'Brand-new-passphrase-9';

let addresses = 0;
/** Each test claims its own client address (TRUST_PROXY is on), so per-address counts stay apart. */
const newAddress = () => `192.0.2.${++addresses}`;

forEachBackend('accounts: password reset', (backend) => {
  const clock = manualClock();
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend, {
      clock,
      env: {
        TRUST_PROXY: 'true',
        OTP_SENDS_PER_EMAIL_PER_HOUR: String(PER_EMAIL),
        OTP_SENDS_PER_ADDRESS_PER_HOUR: String(PER_ADDRESS),
      },
    });
  });
  after(() => server?.close());

  const sendOtp = (email: unknown, address: string) =>
    server.api('POST', '/forgot-password/send-otp', { body: { email }, headers: { 'x-forwarded-for': address } });
  const verifyOtp = (token: unknown, otp: unknown) => server.api('POST', '/forgot-password/verify-otp', { body: { token, otp } });
  const reset = (token: unknown, password: unknown, password_confirmation: unknown = password) =>
    server.api('POST', '/forgot-password/reset', { body: { token, password, password_confirmation } });

  /** send-otp, then the code out of the delivered mail. */
  async function startFlow(email: string, address = newAddress()): Promise<{ token: string; code: string }> {
    await mailSettled(server, email);
    const mark = mailMark(server);
    const res = await sendOtp(email, address);
    assertOk(res);
    assert.equal(typeof res.body.message, 'string');
    assert.equal(typeof res.body.data.token, 'string');
    return { token: res.body.data.token, code: await resetCode(server, email, mark) };
  }

  test('send-otp → mailed code → verify-otp → reset: new password works and every session is revoked', async () => {
    const u = await registerUser(server);
    const other = await signedIn(server, u.email, u.password);
    const flow = await startFlow(u.email);

    assertError(await verifyOtp(flow.token, otherCode(flow.code)), 401, 'invalid_otp');
    const verified = await verifyOtp(flow.token, flow.code);
    assertOk(verified);
    const resetToken = verified.body.data.reset_token as string;
    assert.equal(typeof resetToken, 'string');
    // The code is single use.
    assertError(await verifyOtp(flow.token, flow.code), 401, 'invalid_otp');

    const weak = await reset(resetToken, 'short');
    assertError(weak, 422, 'validation_failed');
    assert.ok(errorFields(weak).includes('password'));
    const mismatch = await reset(resetToken, NEW_PASSWORD, `${NEW_PASSWORD}!`);
    assertError(mismatch, 422);
    assert.deepEqual(errorFields(mismatch), ['password_confirmation']);
    const missing = await server.api('POST', '/forgot-password/reset', { body: {} });
    assertError(missing, 422);
    assert.deepEqual(errorFields(missing), ['password', 'password_confirmation', 'token']);
    assertError(await reset('not-a-reset-token', NEW_PASSWORD), 401, 'invalid_reset_token');
    // The flow token is not a reset token.
    assertError(await reset(flow.token, NEW_PASSWORD), 401, 'invalid_reset_token');
    // The refused attempts changed nothing.
    await assertTokenWorks(server, u.token, u.uuid);

    const done = await reset(resetToken, NEW_PASSWORD);
    assertOk(done);
    assert.equal(typeof done.body.message, 'string');
    assertError(await reset(resetToken, 'Yet-another-pass-1'), 401, 'invalid_reset_token');

    assertError(await signIn(server, u.email, u.password), 401, 'invalid_credentials');
    const fresh = await signIn(server, u.email, NEW_PASSWORD);
    assertOk(fresh);
    await assertTokenWorks(server, fresh.body.data.token, u.uuid);

    await assertTokenRefused(server, u.token);
    await assertTokenRefused(server, other.token);
    assertError(await refresh(server, u.refreshToken), 401, 'invalid_token');
    assertError(await refresh(server, other.refreshToken), 401, 'invalid_token');
  });

  test('send-otp: 404 for an unknown email, 422 for a missing or malformed one', async () => {
    const address = newAddress();
    assertError(await sendOtp(freshEmail('unknown'), address), 404, 'email_not_found');
    const missing = await server.api('POST', '/forgot-password/send-otp', { body: {} });
    assertError(missing, 422, 'validation_failed');
    assert.deepEqual(errorFields(missing), ['email']);
    const malformed = await sendOtp('not-an-email', address);
    assertError(malformed, 422);
    assert.deepEqual(errorFields(malformed), ['email']);
  });

  test(`send-otp: 429 after ${PER_EMAIL} sends to one email in an hour, again allowed after the hour`, async () => {
    const u = await registerUser(server);
    const address = newAddress();
    const variants = [u.email, u.email.toUpperCase(), ` ${u.email} `];
    for (const email of variants) assertOk(await sendOtp(email, address));
    const limited = await sendOtp(u.email, newAddress());
    assertError(limited, 429, 'too_many_attempts');
    assert.equal(limited.headers.get('retry-after'), '3600');
    assert.equal(
      await countRows(server, sql`select count(*)::int as n from mail_outbox where to_address = ${u.email} and kind = 'password_reset_code'`),
      PER_EMAIL,
      'the refused request mailed nothing',
    );
    clock.advance(3601);
    const flow = await startFlow(u.email);
    assertOk(await verifyOtp(flow.token, flow.code));
  });

  test(`send-otp: 429 after ${PER_ADDRESS} requests from one address, across different emails`, async () => {
    const u = await registerUser(server);
    const address = newAddress();
    for (let i = 0; i < PER_ADDRESS; i++) assertError(await sendOtp(freshEmail('probe'), address), 404, 'email_not_found');
    const limited = await sendOtp(u.email, address);
    assertError(limited, 429, 'too_many_attempts');
    assert.ok(Number(limited.headers.get('retry-after')) > 0);
    assert.equal(await countRows(server, sql`select count(*)::int as n from mail_outbox where to_address = ${u.email}`), 0);
    // Another address is not affected.
    assertOk(await sendOtp(u.email, newAddress()));
  });

  test('verify-otp: five wrong tries burn the code, four do not', async () => {
    const u = await registerUser(server);
    const address = newAddress();

    const first = await startFlow(u.email, address);
    for (let i = 0; i < 4; i++) assertError(await verifyOtp(first.token, otherCode(first.code)), 401, 'invalid_otp');
    assertOk(await verifyOtp(first.token, first.code));

    const second = await startFlow(u.email, address);
    for (let i = 0; i < 5; i++) assertError(await verifyOtp(second.token, otherCode(second.code)), 401, 'invalid_otp');
    assertError(await verifyOtp(second.token, second.code), 401, 'invalid_otp');
  });

  test('verify-otp: parallel guesses cannot spend more than five tries', async () => {
    const u = await registerUser(server);
    const flow = await startFlow(u.email);
    const guesses = await Promise.all(Array.from({ length: 12 }, () => verifyOtp(flow.token, otherCode(flow.code))));
    for (const g of guesses) assertError(g, 401, 'invalid_otp');
    const [row] = await query<{ attempts: number }>(
      server,
      sql`select attempts from password_resets where flow_token_hash = ${createHash('sha256').update(flow.token).digest('hex')}`,
    );
    assert.ok(row && row.attempts <= 5, `attempts counted: ${row?.attempts}`);
  });

  test('verify-otp: the code lasts 5 minutes; the reset token expires too', async () => {
    const u = await registerUser(server);
    const address = newAddress();

    const inTime = await startFlow(u.email, address);
    clock.advance(299);
    const verified = await verifyOtp(inTime.token, inTime.code);
    assertOk(verified);
    clock.advance(901);
    assertError(await reset(verified.body.data.reset_token, NEW_PASSWORD), 401, 'invalid_reset_token');
    assertOk(await signIn(server, u.email, u.password));

    const late = await startFlow(u.email, address);
    clock.advance(301);
    assertError(await verifyOtp(late.token, late.code), 401, 'invalid_otp');
  });

  test('a new send-otp invalidates the earlier code', async () => {
    const u = await registerUser(server);
    const address = newAddress();
    const first = await startFlow(u.email, address);
    const second = await startFlow(u.email, address);
    assertError(await verifyOtp(first.token, first.code), 401, 'invalid_otp');
    if (first.code !== second.code) assertError(await verifyOtp(second.token, first.code), 401, 'invalid_otp');
    const ok = await verifyOtp(second.token, second.code);
    assertOk(ok);
    assertOk(await reset(ok.body.data.reset_token, NEW_PASSWORD));
    assertOk(await signIn(server, u.email, NEW_PASSWORD));
  });

  test('verify-otp: 422 for a missing or malformed token or code, 401 for an unknown flow', async () => {
    const missing = await server.api('POST', '/forgot-password/verify-otp', { body: {} });
    assertError(missing, 422, 'validation_failed');
    assert.deepEqual(errorFields(missing), ['otp', 'token']);
    for (const otp of ['12345', '1234567', 'abcdef', '12 345', 123456]) {
      const res = await verifyOtp('some-flow-token', otp);
      assertError(res, 422);
      assert.deepEqual(errorFields(res), ['otp'], `otp ${JSON.stringify(otp)}`);
    }
    const noToken = await verifyOtp('', '123456');
    assertError(noToken, 422);
    assert.deepEqual(errorFields(noToken), ['token']);
    assertError(await verifyOtp('unknown-flow-token', '123456'), 401, 'invalid_otp');
  });
});
