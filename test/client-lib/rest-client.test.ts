/**
 * The REST client against a real server: every endpoint through the client, the typed
 * errors, token handling and idempotency keys.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import {
  createRestClient,
  FieldchartApiError,
  FieldchartClientError,
  NetworkError,
  newIdempotencyKey,
  UnexpectedResponseError,
  type RestClient,
} from '@fieldchart/client';
import { forEachBackend } from '../helpers/backends.ts';
import { startIdProvider, type IdProvider } from '../helpers/id-provider.ts';
import { newAccount, startTestServer, type TestServer } from '../helpers/test-server.ts';

const AUDIENCE = 'fieldchart-client-test';

/** Runs `fn`, which must throw an error of class `type`, and answers it. */
async function rejection<E extends Error>(fn: () => Promise<unknown>, type: abstract new (...args: any[]) => E): Promise<E> {
  try {
    await fn();
  } catch (err) {
    assert.ok(err instanceof type, `expected ${type.name}, got ${String(err)}`);
    return err;
  }
  assert.fail(`expected ${type.name}, nothing was thrown`);
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as net.AddressInfo;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

forEachBackend('client-lib REST client', (backend) => {
  let server: TestServer;
  let google: IdProvider;
  before(async () => {
    google = await startIdProvider('google', AUDIENCE);
    server = await startTestServer(backend, { env: { GOOGLE_CLIENT_IDS: AUDIENCE, GOOGLE_JWKS_URL: google.jwksUrl } });
  });
  after(async () => {
    await server.close();
    await google.close();
  });

  /** A client holding its own token, as an app would. */
  function session(): { api: RestClient; setToken(t: string | null): void } {
    let token: string | null = null;
    return { api: createRestClient({ baseUrl: server.url, getToken: () => token }), setToken: (t) => void (token = t) };
  }

  test('register, sign in, read the profile, refresh', async () => {
    const { api, setToken } = session();
    const account = newAccount();
    const registered = await api.register(account);
    assert.equal(registered.user.email, account.email);
    assert.equal(registered.needs_onboarding, true);
    assert.equal(registered.user.subscription_status, 'trial');
    assert.ok(registered.expires_in > 0);

    const signedIn = await api.signIn({ email: account.email, password: account.password });
    assert.equal(signedIn.loginData.uuid, registered.user.uuid);
    assert.equal(typeof signedIn.trial_ends_at, 'string');
    setToken(signedIn.token);

    const me = await api.myProfile();
    assert.equal(me.email, account.email);
    assert.equal(me.has_password, true);
    assert.deepEqual(me.linked_providers, []);

    const pair = await api.refresh({ refresh_token: signedIn.refresh_token });
    assert.notEqual(pair.refresh_token, signedIn.refresh_token);
    assert.equal((await api.myProfile({ token: pair.token })).uuid, me.uuid);

    // The retired refresh token presented again revokes the family: a typed 401.
    const reused = await rejection(() => api.refresh({ refresh_token: signedIn.refresh_token }), FieldchartApiError);
    assert.equal(reused.status, 401);
    assert.equal(reused.code, 'refresh_token_reused');
  });

  test('a wrong password is a typed 401 invalid_credentials', async () => {
    const { api } = session();
    const account = newAccount();
    await api.register(account);
    const err = await rejection(() => api.signIn({ email: account.email, password: 'not-the-password' }), FieldchartApiError);
    assert.ok(err instanceof FieldchartClientError);
    assert.equal(err.name, 'FieldchartApiError');
    assert.equal(err.status, 401);
    assert.equal(err.code, 'invalid_credentials');
    assert.equal(err.message, 'Invalid email or password');
    assert.deepEqual(err.fieldErrors, {});
  });

  test('an invalid body is a typed 422 with field errors', async () => {
    const { api } = session();
    const err = await rejection(
      () => api.register({ first_name: 'Riley', last_name: ' ', email: 'not-an-email', password: 'short', password_confirmation: 'other' }),
      FieldchartApiError,
    );
    assert.equal(err.status, 422);
    assert.equal(err.code, 'validation_failed');
    assert.deepEqual(Object.keys(err.fieldErrors).sort(), ['email', 'last_name', 'password', 'password_confirmation']);
    assert.deepEqual(err.fieldErrors.email, ['must be a valid email address']);
    assert.deepEqual(err.fieldErrors.password, ['must be at least 8 characters']);

    const taken = newAccount();
    await api.register(taken);
    const dup = await rejection(() => api.register({ ...newAccount(), email: taken.email }), FieldchartApiError);
    assert.equal(dup.status, 422);
    assert.equal(dup.code, 'email_taken');
    assert.ok(dup.fieldErrors.email?.length);
  });

  test('profile, onboarding, disciplines and settings', async () => {
    const { api, setToken } = session();
    setToken((await api.register(newAccount())).token);

    const disciplines = await api.disciplines();
    assert.ok(disciplines.includes('PT'));
    const settings = await api.settings();
    assert.equal(typeof settings, 'object');
    // Every key the server documents (more may be added, so a superset passes).
    const keys = [
      'api_version', 'disciplines', 'password_min_length', 'password_max_length', 'otp_length', 'otp_valid_seconds',
      'access_token_ttl_seconds', 'refresh_token_ttl_seconds', 'trial_days', 'subscription_products', 'organization_types',
      'audio_max_bytes', 'audio_types', 'ai_status_poll_seconds', 'social_sign_in',
    ];
    assert.deepEqual(keys.filter((k) => !(k in settings)), [], `missing from ${JSON.stringify(Object.keys(settings))}`);
    assert.deepEqual([settings.api_version, settings.password_min_length, settings.disciplines], ['v1', 8, disciplines]);

    const updated = await api.updateBasicInfo({ phone: '555-0100', address: '1 Main St' });
    assert.equal(updated.phone, '555-0100');
    assert.equal(updated.address, '1 Main St');

    const onboarded = await api.completeOnboarding({ discipline: 'OT', license_number: 'OT-1234', license_state: 'ca' });
    assert.equal(onboarded.needs_onboarding, false);
    assert.equal(onboarded.discipline, 'OT');
    assert.equal(onboarded.license_state, 'CA');

    const bad = await rejection(() => api.completeOnboarding({ discipline: 'XX' as 'OT' }), FieldchartApiError);
    assert.equal(bad.status, 422);
    assert.ok(bad.fieldErrors.discipline);
  });

  test('an idempotency key replays the first response and refuses another body', async () => {
    const { api, setToken } = session();
    setToken((await api.register(newAccount())).token);
    const idempotencyKey = newIdempotencyKey();
    const first = await api.updateBasicInfo({ phone: '555-0101' }, { idempotencyKey });
    await api.updateBasicInfo({ phone: '555-0102' });
    // The repeat answers what the first request answered, and changes nothing.
    const replay = await api.updateBasicInfo({ phone: '555-0101' }, { idempotencyKey });
    assert.deepEqual(replay, first);
    assert.equal((await api.myProfile()).phone, '555-0102');

    const reused = await rejection(() => api.updateBasicInfo({ phone: '555-0199' }, { idempotencyKey }), FieldchartApiError);
    assert.equal(reused.status, 422);
    assert.equal(reused.code, 'idempotency_key_reused');
  });

  test('change password, log out, and the session errors that follow', async () => {
    const { api, setToken } = session();
    const account = newAccount();
    setToken((await api.register(account)).token);

    const wrong = await rejection(
      () => api.changePassword({ current_password: 'wrong-password', new_password: 'N3w-password!', new_password_confirmation: 'N3w-password!' }),
      FieldchartApiError,
    );
    assert.equal(wrong.code, 'invalid_password');
    const changed = await api.changePassword({
      current_password: account.password,
      new_password: 'N3w-password!',
      new_password_confirmation: 'N3w-password!',
    });
    assert.equal(typeof changed.message, 'string');
    await rejection(() => api.signIn({ email: account.email, password: account.password }), FieldchartApiError);
    await api.signIn({ email: account.email, password: 'N3w-password!' });

    assert.equal(typeof (await api.logout()).message, 'string');
    const revoked = await rejection(() => api.myProfile(), FieldchartApiError);
    assert.equal(revoked.status, 401);
    assert.equal(revoked.code, 'invalid_token');

    setToken(null);
    const missing = await rejection(() => api.myProfile(), FieldchartApiError);
    assert.equal(missing.code, 'missing_token');
  });

  test('onUnauthorized: refresh and retry once on a dead session, not on a wrong password', async () => {
    const account = newAccount();
    const bootstrap = createRestClient({ baseUrl: server.url });
    const registered = await bootstrap.register(account);
    let token: string | null = 'not-a-valid-token';
    let refreshToken = registered.refresh_token;
    const seen: string[] = [];
    const api: RestClient = createRestClient({
      baseUrl: server.url,
      getToken: () => token,
      async onUnauthorized(err) {
        seen.push(err.code);
        const pair = await api.refresh({ refresh_token: refreshToken });
        token = pair.token;
        refreshToken = pair.refresh_token;
        return true;
      },
    });
    assert.equal((await api.myProfile()).email, account.email);
    assert.deepEqual(seen, ['invalid_token']);

    // A wrong current password is a 401 too, but not a dead session: no refresh.
    const wrong = await rejection(
      () => api.deleteAccount({ password: 'not-the-password' }),
      FieldchartApiError,
    );
    assert.equal(wrong.code, 'invalid_password');
    assert.deepEqual(seen, ['invalid_token']);

    // A handler that gives up lets the error through.
    const giveUp = createRestClient({ baseUrl: server.url, getToken: () => 'expired', onUnauthorized: () => undefined });
    assert.equal((await rejection(() => giveUp.myProfile(), FieldchartApiError)).code, 'invalid_token');

    await api.deleteAccount({ password: account.password });
    await rejection(() => bootstrap.signIn({ email: account.email, password: account.password }), FieldchartApiError);
  });

  test('forgot password: emailed code, reset token, new password', async () => {
    const { api } = session();
    const account = newAccount();
    await api.register(account);
    const { token } = await api.forgotPassword.sendOtp({ email: account.email });
    const mail = await server.mail.waitFor(account.email, (m) => /reset code/i.test(m.subject));
    const otp = /\b(\d{6})\b/.exec(mail.subject)?.[1] ?? /\b(\d{6})\b/.exec(mail.text)?.[1];
    assert.ok(otp, 'the mail carries a 6-digit code');

    const badCode = await rejection(() => api.forgotPassword.verifyOtp({ token, otp: otp === '000000' ? '111111' : '000000' }), FieldchartApiError);
    assert.equal(badCode.code, 'invalid_otp');
    const { reset_token } = await api.forgotPassword.verifyOtp({ token, otp });
    const done = await api.forgotPassword.reset({ token: reset_token, password: 'Res3t-password', password_confirmation: 'Res3t-password' });
    assert.equal(typeof done.message, 'string');
    assert.equal((await api.signIn({ email: account.email, password: 'Res3t-password' })).loginData.email, account.email);
  });

  test('social register and sign-in with a Google ID token', async () => {
    const { api } = session();
    const email = newAccount().email;
    const sub = `google-${email}`;
    const body = { provider: 'google' as const, email, first_name: 'Sam', last_name: 'Social' };
    const registered = await api.registerSocial({ ...body, id_token: await google.sign({ sub, email, email_verified: true }) });
    assert.deepEqual(registered.user.linked_providers, ['google']);
    assert.equal(registered.user.has_password, false);
    const signedIn = await api.signInSocial({ ...body, id_token: await google.sign({ sub }) });
    assert.equal(signedIn.loginData.uuid, registered.user.uuid);

    const forged = await google.sign({ sub, foreignKey: true });
    const foreign = await rejection(() => api.signInSocial({ ...body, id_token: forged }), FieldchartApiError);
    assert.equal(foreign.status, 401);
    assert.equal(foreign.code, 'invalid_id_token');
  });
});

// Transport behaviour: no database involved, so once rather than per backend.
test('an unreachable server is a NetworkError', async () => {
  const api = createRestClient({ baseUrl: `http://127.0.0.1:${await closedPort()}` });
  const err = await rejection(() => api.signIn({ email: 'a@example.test', password: 'whatever-long' }), NetworkError);
  assert.ok(err instanceof FieldchartClientError);
  assert.ok(!(err instanceof FieldchartApiError));
  assert.equal(err.timedOut, false);
});

test('a timeout is a NetworkError, a caller abort is the abort reason', async () => {
  // A server that accepts and never answers.
  const sockets = new Set<net.Socket>();
  const silent = net.createServer((s) => sockets.add(s));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
  try {
    const timedOut = await rejection(() => createRestClient({ baseUrl, timeoutMs: 100 }).disciplines({ token: 't' }), NetworkError);
    assert.equal(timedOut.timedOut, true);

    const controller = new AbortController();
    const pending = createRestClient({ baseUrl, timeoutMs: 0 }).disciplines({ token: 't', signal: controller.signal });
    controller.abort();
    await assert.rejects(pending, (err: Error) => err.name === 'AbortError' && !(err instanceof FieldchartClientError));
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  }
});

test('a success body outside the schema is an UnexpectedResponseError; a non-contract error body still a FieldchartApiError', async () => {
  const answers: Array<() => Response> = [
    () => Response.json({ status: true, data: { email: 42 } }),
    () => new Response('<html>ok</html>', { status: 200, headers: { 'content-type': 'text/html' } }),
    () => new Response('<html>Bad gateway</html>', { status: 502, headers: { 'content-type': 'text/html' } }),
    () => Response.json({ status: false, message: 'Slow down', code: 'too_many_attempts' }, { status: 429, headers: { 'retry-after': '42' } }),
  ];
  const requests: Array<{ url: string; init: RequestInit }> = [];
  const api = createRestClient({
    baseUrl: 'https://fieldchart.invalid/',
    getToken: () => 'tok',
    fetch: async (url, init) => {
      requests.push({ url, init });
      const next = answers.shift();
      assert.ok(next);
      return next();
    },
  });
  const mismatch = await rejection(() => api.myProfile(), UnexpectedResponseError);
  assert.equal(mismatch.status, 200);
  assert.ok(mismatch.issues.some((i) => i.path === 'data.email'));
  assert.doesNotMatch(mismatch.message, /42/, 'bodies are not quoted');
  assert.equal(requests[0]?.url, 'https://fieldchart.invalid/api/therapist/v1/my-profile');
  assert.equal((requests[0]?.init.headers as Record<string, string>).authorization, 'Bearer tok');

  assert.deepEqual((await rejection(() => api.myProfile(), UnexpectedResponseError)).issues, []);

  const gateway = await rejection(() => api.myProfile(), FieldchartApiError);
  assert.equal(gateway.status, 502);
  assert.equal(gateway.code, 'unexpected_response');

  const throttled = await rejection(() => api.signIn({ email: 'a@example.test', password: 'x' }, { idempotencyKey: 'k-1' }), FieldchartApiError);
  assert.equal(throttled.retryAfterSeconds, 42);
  const headers = requests[3]?.init.headers as Record<string, string>;
  assert.equal(headers['idempotency-key'], 'k-1');
  assert.equal(headers.authorization, undefined, 'public endpoints get no token');
  assert.equal(headers['content-type'], 'application/json');
});
