import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { forEachBackend } from '../../helpers/backends.ts';
import { startIdProvider, type IdProvider } from '../../helpers/id-provider.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { assertError, assertOk, assertTokenWorks, errorFields, freshEmail, usersWithEmail } from './support.ts';

const GOOGLE_AUD = 'google-client-ios';
const GOOGLE_AUD_2 = 'google-client-android';
const APPLE_AUD = 'com.example.fieldchart';

let subjects = 0;
const newSub = () => `sub-${++subjects}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;

interface Providers {
  google: IdProvider;
  apple: IdProvider;
}

async function startProviders(): Promise<Providers> {
  return { google: await startIdProvider('google', GOOGLE_AUD), apple: await startIdProvider('apple', APPLE_AUD) };
}

function providerEnv(p: Providers, withClientIds = true): Record<string, string> {
  return {
    GOOGLE_JWKS_URL: p.google.jwksUrl,
    APPLE_JWKS_URL: p.apple.jwksUrl,
    ...(withClientIds ? { GOOGLE_CLIENT_IDS: `${GOOGLE_AUD}, ${GOOGLE_AUD_2}`, APPLE_CLIENT_IDS: APPLE_AUD } : {}),
  };
}

const body = (provider: 'google' | 'apple', id_token: string, email: string) => ({
  provider,
  id_token,
  email,
  first_name: 'Sam',
  last_name: 'Rivera',
});

forEachBackend('accounts: social sign-in', (backend) => {
  describe('register/social and sign-in/social', () => {
    let p: Providers;
    let server: TestServer;
    before(async () => {
      p = await startProviders();
      server = await startTestServer(backend, { env: providerEnv(p) });
    });
    after(async () => {
      await server?.close();
      await p?.google.close();
      await p?.apple.close();
    });

    for (const provider of ['google', 'apple'] as const) {
      test(`${provider}: register/social creates the account, sign-in/social signs into it`, async () => {
        const idp = p[provider];
        const sub = newSub();
        const email = freshEmail(provider);
        const reg = await server.api('POST', '/register/social', {
          body: body(provider, await idp.sign({ sub, email, email_verified: true }), email),
        });
        assertOk(reg);
        const r = reg.body.data;
        assert.equal(r.needs_onboarding, true);
        assert.equal(typeof r.refresh_token, 'string');
        assert.equal(r.expires_in, 3600);
        assert.equal(r.user.email, email);
        assert.equal(r.user.subscription_status, 'trial');
        assert.ok(r.user.trial_ends_at);
        assert.equal(r.user.has_password, false);
        assert.deepEqual(r.user.linked_providers, [provider]);
        await assertTokenWorks(server, r.token, r.user.uuid);
        // GET /my-profile answers from the facts its session check selects: the same profile.
        const mine = await server.api('GET', '/my-profile', { token: r.token });
        assertOk(mine);
        assert.deepEqual(mine.body.data, r.user);

        const signIn = await server.api('POST', '/sign-in/social', {
          body: body(provider, await idp.sign({ sub, email, email_verified: true }), email),
        });
        assertOk(signIn);
        const s = signIn.body.data;
        assert.deepEqual(s.loginData, {
          uuid: r.user.uuid,
          first_name: 'Sam',
          last_name: 'Rivera',
          email,
          subscription_status: 'trial',
        });
        assert.equal(s.trial_ends_at, r.user.trial_ends_at);
        assert.equal(s.needs_onboarding, true);
        assert.equal(typeof s.refresh_token, 'string');
        await assertTokenWorks(server, s.token, r.user.uuid);
      });
    }

    test('every configured client id is an accepted audience', async () => {
      const sub = newSub();
      const email = freshEmail('android');
      const token = await p.google.sign({ sub, aud: GOOGLE_AUD_2, email, email_verified: true });
      assertOk(await server.api('POST', '/register/social', { body: body('google', token, email) }));
    });

    test("the provider's verified email wins over the typed one; an unverified one does not", async () => {
      const verified = freshEmail('verified');
      const typed = freshEmail('typed');
      const a = await server.api('POST', '/register/social', {
        body: body('google', await p.google.sign({ sub: newSub(), email: verified, email_verified: true }), typed),
      });
      assertOk(a);
      assert.equal(a.body.data.user.email, verified);
      assert.equal(a.body.data.user.email_verified, true, "the provider's verified email counts as proof");
      assert.equal(await usersWithEmail(server, typed), 0);

      const unverified = freshEmail('unverified');
      const typed2 = freshEmail('typed2');
      const b = await server.api('POST', '/register/social', {
        body: body('google', await p.google.sign({ sub: newSub(), email: unverified, email_verified: false }), typed2),
      });
      assertOk(b);
      assert.equal(b.body.data.user.email, typed2);
      assert.equal(b.body.data.user.email_verified, false, 'a typed address is unproven');
    });

    test('the identity is provider + subject: the same email under another subject or provider does not sign in', async () => {
      const sub = newSub();
      const email = freshEmail('victim');
      const reg = await server.api('POST', '/register/social', {
        body: body('google', await p.google.sign({ sub, email, email_verified: true }), email),
      });
      assertOk(reg);

      const otherSub = await server.api('POST', '/sign-in/social', {
        body: body('google', await p.google.sign({ sub: newSub(), email, email_verified: true }), email),
      });
      assertError(otherSub, 401, 'account_not_found');

      const sameSubAtApple = await server.api('POST', '/sign-in/social', {
        body: body('apple', await p.apple.sign({ sub, email, email_verified: true }), email),
      });
      assertError(sameSubAtApple, 401, 'account_not_found');

      // A password account with that email is not reachable by social sign-in either.
      const pw = await registerUser(server);
      const intoPassword = await server.api('POST', '/sign-in/social', {
        body: body('google', await p.google.sign({ sub: newSub(), email: pw.email, email_verified: true }), pw.email),
      });
      assertError(intoPassword, 401, 'account_not_found');
    });

    test('register/social with an identity that already has an account: 422', async () => {
      const sub = newSub();
      const email = freshEmail('twice');
      assertOk(await server.api('POST', '/register/social', {
        body: body('apple', await p.apple.sign({ sub, email, email_verified: true }), email),
      }));
      // Same subject, another typed and another verified address: still the same identity.
      const other = freshEmail('other');
      const again = await server.api('POST', '/register/social', {
        body: body('apple', await p.apple.sign({ sub, email: other, email_verified: true }), other),
      });
      assertError(again, 422, 'account_exists');
      assert.deepEqual(errorFields(again), ['id_token']);
      assert.equal(await usersWithEmail(server, other), 0);
    });

    test('register/social with an email already in use: 422', async () => {
      const pw = await registerUser(server);
      // Verified by the provider, in another case.
      const viaToken = await server.api('POST', '/register/social', {
        body: body('google', await p.google.sign({ sub: newSub(), email: pw.email.toUpperCase(), email_verified: true }), freshEmail()),
      });
      assertError(viaToken, 422, 'email_taken');
      assert.deepEqual(errorFields(viaToken), ['email']);
      // Typed, with no email in the token.
      const typed = await server.api('POST', '/register/social', {
        body: body('google', await p.google.sign({ sub: newSub() }), pw.email),
      });
      assertError(typed, 422, 'email_taken');
      assert.equal(await usersWithEmail(server, pw.email), 1);
    });

    test('an invalid ID token is a 401 on both endpoints, and creates nothing', async () => {
      const email = freshEmail('forged');
      const cases: Array<[string, 'google' | 'apple', () => Promise<string>]> = [
        ['wrong audience', 'google', () => p.google.sign({ sub: newSub(), aud: 'someone-elses-client', email })],
        ['wrong issuer', 'google', () => p.google.sign({ sub: newSub(), iss: 'https://evil.example', email })],
        ['apple token as google', 'google', () => p.apple.sign({ sub: newSub(), aud: GOOGLE_AUD, email })],
        ['google token as apple', 'apple', () => p.google.sign({ sub: newSub(), aud: APPLE_AUD, iss: 'https://appleid.apple.com', email })],
        ['expired', 'google', () => p.google.sign({ sub: newSub(), email, expiresInSeconds: -60 })],
        ['foreign key, known kid', 'apple', () => p.apple.sign({ sub: newSub(), email, foreignKey: true })],
        ['garbage', 'google', async () => 'not.a.jwt'],
        ['tampered payload', 'google', async () => {
          const [h, , s] = (await p.google.sign({ sub: newSub(), email })).split('.');
          return `${h}.${Buffer.from(JSON.stringify({ sub: 'admin', aud: GOOGLE_AUD, iss: p.google.issuer, exp: 9999999999, iat: 1 })).toString('base64url')}.${s}`;
        }],
      ];
      for (const [label, provider, token] of cases) {
        for (const path of ['/sign-in/social', '/register/social']) {
          const res = await server.api('POST', path, { body: body(provider, await token(), email) });
          assert.equal(res.status, 401, `${label} on ${path}: ${JSON.stringify(res.body)}`);
          assertError(res, 401, 'invalid_id_token');
        }
      }
      assert.equal(await usersWithEmail(server, email), 0);
    });

    test('422 for missing or invalid fields on both endpoints', async () => {
      const token = await p.google.sign({ sub: newSub() });
      for (const path of ['/sign-in/social', '/register/social']) {
        const empty = await server.api('POST', path, { body: {} });
        assertError(empty, 422, 'validation_failed');
        assert.deepEqual(errorFields(empty), ['email', 'first_name', 'id_token', 'last_name', 'provider']);

        const onlyToken = await server.api('POST', path, { body: { provider: 'google', id_token: token } });
        assertError(onlyToken, 422);
        assert.deepEqual(errorFields(onlyToken), ['email', 'first_name', 'last_name']);

        const badProvider = await server.api('POST', path, { body: { ...body('google', token, freshEmail()), provider: 'facebook' } });
        assertError(badProvider, 422);
        assert.deepEqual(errorFields(badProvider), ['provider']);

        const badEmail = await server.api('POST', path, { body: body('google', token, 'nope') });
        assertError(badEmail, 422);
        assert.deepEqual(errorFields(badEmail), ['email']);

        const emptyToken = await server.api('POST', path, { body: body('google', '', freshEmail()) });
        assertError(emptyToken, 422);
        assert.deepEqual(errorFields(emptyToken), ['id_token']);
      }
    });
  });

  describe('key caching, and a provider without client ids', () => {
    let p: Providers;
    let server: TestServer;
    before(async () => {
      p = await startProviders();
      // Google is configured; Apple has its key URL but no client id to accept.
      server = await startTestServer(backend, { env: { ...providerEnv(p, false), GOOGLE_CLIENT_IDS: GOOGLE_AUD } });
    });
    after(async () => {
      await server?.close();
      await p?.google.close();
      await p?.apple.close();
    });

    test('many sign-ins fetch the JWKS once; a flood of unknown kids does not refetch each time', async () => {
      assert.equal(p.google.fetches(), 0);
      const sub = newSub();
      const email = freshEmail('cached');
      assertOk(await server.api('POST', '/register/social', { body: body('google', await p.google.sign({ sub, email }), email) }));
      for (let i = 0; i < 5; i++) {
        assertOk(await server.api('POST', '/sign-in/social', { body: body('google', await p.google.sign({ sub }), email) }));
      }
      const parallel = await Promise.all(
        Array.from({ length: 5 }, async () => server.api('POST', '/sign-in/social', { body: body('google', await p.google.sign({ sub }), email) })),
      );
      for (const r of parallel) assertOk(r);
      assert.equal(p.google.fetches(), 1, 'eleven sign-ins, one key fetch');

      const before = p.google.fetches();
      const flood = await Promise.all(
        Array.from({ length: 20 }, async (_, i) =>
          server.api('POST', '/sign-in/social', {
            body: body('google', await p.google.sign({ sub, kid: `rotated-key-${i}`, foreignKey: true }), email),
          }),
        ),
      );
      for (const r of flood) assertError(r, 401, 'invalid_id_token');
      for (let i = 0; i < 5; i++) {
        const r = await server.api('POST', '/sign-in/social', {
          body: body('google', await p.google.sign({ sub, kid: `later-key-${i}`, foreignKey: true }), email),
        });
        assertError(r, 401, 'invalid_id_token');
      }
      assert.ok(p.google.fetches() - before <= 1, `25 unknown kids caused ${p.google.fetches() - before} refetches`);
      // The known key still works.
      assertOk(await server.api('POST', '/sign-in/social', { body: body('google', await p.google.sign({ sub }), email) }));
    });

    test('no client ids configured: valid tokens answer 401 on both endpoints, and no key is fetched', async () => {
      const email = freshEmail('unconfigured');
      for (const path of ['/register/social', '/sign-in/social']) {
        const token = await p.apple.sign({ sub: newSub(), email, email_verified: true });
        assertError(await server.api('POST', path, { body: body('apple', token, email) }), 401, 'invalid_id_token');
      }
      assert.equal(await usersWithEmail(server, email), 0);
      assert.equal(p.apple.fetches(), 0, 'no key fetch without an audience to accept');
    });
  });

  describe('a key endpoint that answers 500', () => {
    let failing: IdProvider;
    let server: TestServer;
    before(async () => {
      failing = await startIdProvider('google', GOOGLE_AUD, { failWith: 500 });
      server = await startTestServer(backend, {
        env: { GOOGLE_JWKS_URL: failing.jwksUrl, GOOGLE_CLIENT_IDS: GOOGLE_AUD },
      });
    });
    after(async () => {
      await server?.close();
      await failing?.close();
    });

    test('sign-in/social answers 503 identity_provider_unavailable, not 401', async () => {
      const email = freshEmail('outage');
      const token = await failing.sign({ sub: newSub(), email, email_verified: true });
      const res = await server.api('POST', '/sign-in/social', { body: body('google', token, email) });
      assertError(res, 503, 'identity_provider_unavailable');
      assert.ok(failing.fetches() >= 1, 'the key endpoint was asked');
    });
  });
});
