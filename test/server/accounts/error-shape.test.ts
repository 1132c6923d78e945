import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { forEachBackend } from '../../helpers/backends.ts';
import { API, newAccount, registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { assertError, assertOk, assertTokenWorks, errorFields, signIn, usersWithEmail } from './support.ts';

const BODY_LIMIT = 2048;

forEachBackend('accounts: error shape', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend, { env: { BODY_LIMIT_BYTES: String(BODY_LIMIT) } });
  });
  after(() => server?.close());

  test('unknown routes and methods: 404 in the same shape, token or not', async () => {
    const u = await registerUser(server);
    const cases: Array<[string, string, string | null]> = [
      ['GET', `${API}/no-such-endpoint`, null],
      ['POST', `${API}/no-such-endpoint`, u.token],
      ['GET', `${API}/no-such-endpoint`, 'garbage-token'],
      ['GET', '/no-such-page', null],
      ['GET', `${API}/sign-in`, null],
      ['DELETE', `${API}/logout`, u.token],
      ['GET', `${API.replace('therapist', 'admin')}/my-profile`, u.token],
    ];
    for (const [method, path, token] of cases) {
      const res = await server.request(method, path, { token });
      assert.equal(res.status, 404, `${method} ${path}`);
      assertError(res, 404, 'route_not_found');
    }
  });

  test('malformed or empty JSON is a 400; a JSON value that is not an object is a 422', async () => {
    for (const rawBody of ['{"email":', '{email: "a@example.test"}', "{'a':1}", '{"a":1}}']) {
      assertError(await server.api('POST', '/sign-in', { rawBody }), 400, 'malformed_json');
    }
    assertError(await server.api('POST', '/register', { rawBody: '' }), 400, 'malformed_json');
    // Prototype pollution attempts are refused by the parser.
    assertError(await server.api('POST', '/sign-in', { rawBody: '{"__proto__":{"admin":true},"email":"a@example.test","password":"x"}' }), 400);
    for (const rawBody of ['null', '[]', '"text"', '42']) {
      const res = await server.api('POST', '/sign-in', { rawBody });
      assertError(res, 422, 'validation_failed');
      assert.deepEqual(errorFields(res), ['body']);
    }
  });

  test(`a body over BODY_LIMIT_BYTES (${BODY_LIMIT}) is a 413, before anything runs`, async () => {
    const big = newAccount({ first_name: 'x'.repeat(BODY_LIMIT) });
    const res = await server.api('POST', '/register', { body: big });
    assertError(res, 413, 'payload_too_large');
    assert.equal(await usersWithEmail(server, big.email), 0);

    const u = await registerUser(server);
    const onBearer = await server.api('POST', '/change-password', {
      token: u.token,
      body: { current_password: u.password, new_password: 'y'.repeat(BODY_LIMIT), new_password_confirmation: 'y'.repeat(BODY_LIMIT) },
    });
    assertError(onBearer, 413, 'payload_too_large');
    assertOk(await signIn(server, u.email, u.password));
  });

  test('an unsupported content type is a 415', async () => {
    const res = await server.api('POST', '/sign-in', { rawBody: '<email>a@example.test</email>', headers: { 'content-type': 'application/xml' } });
    assertError(res, 415, 'unsupported_media_type');
  });

  test('422 bodies name fields with string arrays and never echo the submitted secrets', async () => {
    const secret = 'Sup3r-Secret-Value';
    const res = await server.api('POST', '/register', {
      body: { first_name: 42, email: { $gt: '' }, password: secret, password_confirmation: [secret] },
    });
    assertError(res, 422, 'validation_failed');
    assert.deepEqual(errorFields(res), ['email', 'first_name', 'last_name', 'password_confirmation']);
    assert.doesNotMatch(JSON.stringify(res.body), new RegExp(secret));
  });

  test('a bearer token is only read from the Authorization header, never from the URL', async () => {
    const u = await registerUser(server);
    for (const qs of [`token=${u.token}`, `access_token=${u.token}`, `authorization=Bearer%20${u.token}`]) {
      assertError(await server.api('GET', `/my-profile?${qs}`), 401, 'missing_token');
      assertError(await server.api('POST', `/logout?${qs}`), 401, 'missing_token');
    }
    // In a body it is not read either.
    assertError(await server.api('POST', '/logout', { body: { token: u.token, access_token: u.token } }), 401, 'missing_token');
    // None of that logged the session out.
    await assertTokenWorks(server, u.token, u.uuid);
  });

  test('401, 404 and 422 bodies of the accounts area carry no internal details', async () => {
    const u = await registerUser(server);
    const responses = [
      await signIn(server, u.email, 'wrong-password'),
      await server.api('POST', '/forgot-password/send-otp', { body: { email: 'nobody@example.test' } }),
      await server.api('POST', '/forgot-password/verify-otp', { body: { token: "' or 1=1 --", otp: '000000' } }),
      await server.api('POST', '/token/refresh', { body: { refresh_token: "'; drop table users; --" } }),
      await server.api('POST', '/register', { body: { ...newAccount(), email: u.email } }),
    ];
    const expected = [401, 404, 401, 401, 422];
    responses.forEach((res, i) => assertError(res, expected[i] ?? 0));
  });

  test('a database failure is a 500 with no SQL, stack or driver text', async () => {
    const u = await registerUser(server);
    await server.runtime.database.db.execute(sql`alter table users rename to users_away`);
    try {
      const res = await signIn(server, u.email, u.password);
      assertError(res, 500, 'internal_error');
      assert.equal(res.body.message, 'Internal server error');
      const reg = await server.api('POST', '/register', { body: newAccount() });
      assertError(reg, 500, 'internal_error');
    } finally {
      await server.runtime.database.db.execute(sql`alter table users_away rename to users`);
    }
    assertOk(await signIn(server, u.email, u.password));
  });
});
