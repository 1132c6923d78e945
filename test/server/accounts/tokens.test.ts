import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import {
  assertError,
  assertOk,
  assertTokenRefused,
  assertTokenWorks,
  bearerEndpoints,
  jwtParts,
  mint,
  profile,
  serverSigningKey,
  signIn,
  signedIn,
  unsignedToken,
} from './support.ts';

forEachBackend('accounts: access tokens', (backend) => {
  const clock = manualClock();
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend, { clock });
  });
  after(() => server?.close());

  describe('the access JWT', () => {
    test('header ES256 + kid + at+jwt; claims token_panel, iss, aud, sub, sid, exp', async () => {
      const u = await registerUser(server);
      const { header, payload } = jwtParts(u.token);
      assert.equal(header.alg, 'ES256');
      assert.equal(header.typ, 'at+jwt');
      assert.equal(typeof header.kid, 'string');
      assert.equal(header.kid, (await serverSigningKey(server)).kid);
      assert.equal(payload.token_panel, 'therapist');
      assert.equal(payload.iss, 'fieldchart');
      assert.equal(payload.aud, 'fieldchart-therapist');
      assert.equal(payload.sub, u.uuid);
      assert.match(String(payload.sid), /^[0-9a-f-]{36}$/);
      assert.equal(payload.iat, Math.floor(clock.now().getTime() / 1000));
      assert.equal(payload.exp, (payload.iat ?? 0) + 3600);
      assert.equal(typeof payload.jti, 'string');
      // Nothing personal rides in the token.
      assert.doesNotMatch(JSON.stringify(payload), new RegExp(u.email.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
      // Each sign-in is its own session.
      const again = jwtParts((await signedIn(server, u.email, u.password)).token).payload;
      assert.notEqual(again.sid, payload.sid);
    });

    test('a self-minted token with the right claims works (control for the forgeries below)', async () => {
      const u = await registerUser(server);
      const key = await serverSigningKey(server);
      const { payload } = jwtParts(u.token);
      await assertTokenWorks(server, await mint(key, { ...payload, jti: randomUUID() }), u.uuid);
    });

    test('forged or altered tokens are refused', async () => {
      const u = await registerUser(server);
      const v = await registerUser(server);
      const key = await serverSigningKey(server);
      const base = { ...jwtParts(u.token).payload, jti: randomUUID() } as JWTPayload;
      const foreign = await generateKeyPair('ES256');
      const publicJwk = await exportJWK((await generateKeyPair('ES256', { extractable: true })).publicKey);

      const forgeries: Array<[string, string]> = [
        ['token_panel admin', await mint(key, { ...base, token_panel: 'admin' })],
        ['no token_panel', await mint(key, { ...base, token_panel: undefined })],
        ['alg none', unsignedToken(base, key.kid)],
        ['signed by another key under our kid', await mint({ kid: key.kid, key: foreign.privateKey }, base)],
        ['signed by another key, unknown kid', await mint({ kid: 'attacker-key', key: foreign.privateKey }, base)],
        ['HS256 with a public key as secret', await new SignJWT(base).setProtectedHeader({ alg: 'HS256', kid: key.kid, typ: 'at+jwt' }).sign(new TextEncoder().encode(JSON.stringify(publicJwk)))],
        ['wrong issuer', await mint(key, { ...base, iss: 'someone-else' })],
        ['wrong audience', await mint(key, { ...base, aud: 'fieldchart-admin' })],
        ['typ JWT', await mint(key, base, { typ: 'JWT' })],
        ['expired', await mint(key, { ...base, iat: (base.iat ?? 0) - 7200, exp: (base.iat ?? 0) - 3600 })],
        ['no sid', await mint(key, { ...base, sid: undefined })],
        ["another user's session", await mint(key, { ...base, sid: jwtParts(v.token).payload.sid })],
        ['unknown session', await mint(key, { ...base, sid: randomUUID() })],
        ['sid not a uuid', await mint(key, { ...base, sid: "x' or '1'='1" })],
        ['sub not a uuid', await mint(key, { ...base, sub: 'admin' })],
        ['sid a number', await mint(key, { ...base, sid: 42 })],
        ['tampered subject', (() => {
          const [h, , s] = u.token.split('.');
          return `${h}.${Buffer.from(JSON.stringify({ ...jwtParts(u.token).payload, sub: v.uuid })).toString('base64url')}.${s}`;
        })()],
      ];
      for (const [label, token] of forgeries) {
        const res = await profile(server, token);
        assert.equal(res.status, 401, `${label}: ${JSON.stringify(res.body)}`);
        assertError(res, 401, 'invalid_token');
      }
      // The real token was never harmed.
      await assertTokenWorks(server, u.token, u.uuid);
    });
  });

  describe('bad tokens on every bearer endpoint of the area', () => {
    /** Asserts every bearer endpoint refuses `token`, then that the account was left alone. */
    async function refusedEverywhere(token: string | null, code: string, u: { email: string; password: string }) {
      for (const e of bearerEndpoints(u.password)) {
        const res = await server.api(e.method, e.path, { token, ...(e.body ? { body: e.body } : {}) });
        assert.equal(res.status, 401, `${e.method} ${e.path}: ${JSON.stringify(res.body)}`);
        assertError(res, 401, code);
      }
      // Neither change-password nor delete-account ran.
      assertOk(await signIn(server, u.email, u.password));
    }

    test('missing token', async () => {
      const u = await registerUser(server);
      await refusedEverywhere(null, 'missing_token', u);
      for (const authorization of ['', 'Bearer', 'Bearer ', `Basic ${Buffer.from(`${u.email}:${u.password}`).toString('base64')}`, u.token, `Token ${u.token}`]) {
        const res = await server.api('GET', '/my-profile', { headers: { authorization } });
        assertError(res, 401, 'missing_token');
      }
    });

    test('garbage token', async () => {
      const u = await registerUser(server);
      await refusedEverywhere('garbage', 'invalid_token', u);
      await refusedEverywhere('a.b.c', 'invalid_token', u);
    });

    test('token signed by another key', async () => {
      const u = await registerUser(server);
      const foreign = await generateKeyPair('ES256');
      const { header, payload } = jwtParts(u.token);
      await refusedEverywhere(await mint({ kid: String(header.kid), key: foreign.privateKey }, payload), 'invalid_token', u);
    });

    test('expired token', async () => {
      const u = await registerUser(server);
      clock.advance(3601);
      await refusedEverywhere(u.token, 'invalid_token', u);
    });

    test('token after logout', async () => {
      const u = await registerUser(server);
      assertOk(await server.api('POST', '/logout', { token: u.token }));
      await refusedEverywhere(u.token, 'invalid_token', u);
      await assertTokenRefused(server, u.token);
    });
  });
});
