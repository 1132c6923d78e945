/**
 * The profile area (spec: Profile and Settings) on a real server, on every backend: read the
 * caller's profile, update basic info, complete onboarding, and the two vocabularies.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DISCIPLINES } from '@fieldchart/schema/api';
import { forEachBackend } from '../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';

const PROFILE_FIELDS = [
  'uuid',
  'first_name',
  'last_name',
  'email',
  'subscription_status',
  'phone',
  'address',
  'discipline',
  'license_number',
  'license_state',
  'needs_onboarding',
  'trial_ends_at',
  'email_verified',
  'has_password',
  'linked_providers',
  'created_at',
].sort();

forEachBackend('profile', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  /** Every protected route answers 401 in the contract's shape without a token and with a bad one. */
  async function assertUnauthenticated(method: string, path: string, body?: unknown) {
    const none = await server.api(method, path, body === undefined ? {} : { body });
    assert.equal(none.status, 401);
    assert.equal(none.body.status, false);
    assert.equal(none.body.code, 'missing_token');
    const bad = await server.api(method, path, { token: 'not.a.token', ...(body === undefined ? {} : { body }) });
    assert.equal(bad.status, 401);
    assert.equal(bad.body.status, false);
    assert.equal(typeof bad.body.message, 'string');
  }

  describe('GET /my-profile', () => {
    test('answers the caller profile', async () => {
      const u = await registerUser(server, { first_name: 'Pat', last_name: 'Profile' });
      const res = await server.api('GET', '/my-profile', { token: u.token });
      assert.equal(res.status, 200);
      assert.equal(res.body.status, true);
      const p = res.body.data;
      assert.deepEqual(Object.keys(p).sort(), PROFILE_FIELDS);
      assert.equal(p.uuid, u.uuid);
      assert.equal(p.email, u.email);
      assert.equal(p.first_name, 'Pat');
      assert.equal(p.last_name, 'Profile');
      assert.equal(p.subscription_status, 'trial');
      assert.ok(Date.parse(p.trial_ends_at) > Date.now());
      assert.equal(p.needs_onboarding, true);
      assert.equal(p.has_password, true);
      assert.deepEqual(p.linked_providers, []);
      assert.equal(p.phone, null);
      assert.equal(p.discipline, null);
    });

    test('401 without a token or with a bad one', () => assertUnauthenticated('GET', '/my-profile'));
  });

  describe('PUT /update-basic-info', () => {
    test('updates only the fields sent', async () => {
      const u = await registerUser(server, { first_name: 'Old', last_name: 'Name' });
      const res = await server.api('PUT', '/update-basic-info', {
        token: u.token,
        body: { first_name: 'New', phone: '555-0100', address: '1 Main St' },
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.status, true);
      assert.equal(res.body.data.first_name, 'New');
      assert.equal(res.body.data.last_name, 'Name');
      assert.equal(res.body.data.email, u.email);
      assert.equal(res.body.data.phone, '555-0100');
      assert.equal(res.body.data.address, '1 Main St');

      const me = await server.api('GET', '/my-profile', { token: u.token });
      assert.equal(me.body.data.first_name, 'New');
      assert.equal(me.body.data.phone, '555-0100');

      // A new email (any case) is stored lower-cased, and signs in.
      const email = `Changed.${Date.now()}.${process.pid}@Example.test`;
      const changed = await server.api('PUT', '/update-basic-info', { token: u.token, body: { email } });
      assert.equal(changed.status, 200);
      assert.equal(changed.body.data.email, email.toLowerCase());
      const signIn = await server.api('POST', '/sign-in', { body: { email: email.toLowerCase(), password: u.password } });
      assert.equal(signIn.status, 200);
    });

    test('422 when the email belongs to another account', async () => {
      const a = await registerUser(server);
      const b = await registerUser(server);
      const res = await server.api('PUT', '/update-basic-info', { token: a.token, body: { email: b.email } });
      assert.equal(res.status, 422);
      assert.equal(res.body.status, false);
      assert.equal(res.body.code, 'email_taken');
      assert.ok(Array.isArray(res.body.errors.email));
      // The same address in another case is the same address.
      const upper = await server.api('PUT', '/update-basic-info', { token: a.token, body: { email: b.email.toUpperCase() } });
      assert.equal(upper.status, 422);
      assert.equal(upper.body.code, 'email_taken');
      assert.equal((await server.api('GET', '/my-profile', { token: a.token })).body.data.email, a.email);
    });

    test('422 on an invalid email', async () => {
      const u = await registerUser(server);
      const res = await server.api('PUT', '/update-basic-info', { token: u.token, body: { email: 'not-an-email' } });
      assert.equal(res.status, 422);
      assert.equal(res.body.status, false);
      assert.equal(res.body.code, 'validation_failed');
      assert.ok(Array.isArray(res.body.errors.email));
    });

    test('401 without a token or with a bad one', () => assertUnauthenticated('PUT', '/update-basic-info', { first_name: 'X' }));
  });

  describe('POST /complete-onboarding', () => {
    test('records discipline and license and clears needs_onboarding', async () => {
      const u = await registerUser(server);
      const res = await server.api('POST', '/complete-onboarding', {
        token: u.token,
        body: { discipline: 'PT', license_number: 'PT-12345', license_state: 'ca' },
      });
      assert.equal(res.status, 200);
      assert.equal(res.body.status, true);
      assert.equal(res.body.data.discipline, 'PT');
      assert.equal(res.body.data.license_number, 'PT-12345');
      assert.equal(res.body.data.license_state, 'CA');
      assert.equal(res.body.data.needs_onboarding, false);

      const signIn = await server.api('POST', '/sign-in', { body: { email: u.email, password: u.password } });
      assert.equal(signIn.status, 200);
      assert.equal(signIn.body.data.needs_onboarding, false);
    });

    test('422 on an unknown discipline', async () => {
      const u = await registerUser(server);
      const res = await server.api('POST', '/complete-onboarding', { token: u.token, body: { discipline: 'WIZARD' } });
      assert.equal(res.status, 422);
      assert.equal(res.body.code, 'validation_failed');
      assert.ok(Array.isArray(res.body.errors.discipline));
      const me = await server.api('GET', '/my-profile', { token: u.token });
      assert.equal(me.body.data.needs_onboarding, true);
    });

    test('401 without a token or with a bad one', () => assertUnauthenticated('POST', '/complete-onboarding', { discipline: 'PT' }));
  });

  describe('GET /therapist-discipline', () => {
    test('answers the discipline codes', async () => {
      const u = await registerUser(server);
      const res = await server.api('GET', '/therapist-discipline', { token: u.token });
      assert.equal(res.status, 200);
      assert.equal(res.body.status, true);
      assert.ok(Array.isArray(res.body.data));
      for (const code of ['PT', 'OT', 'SLP', 'RN']) assert.ok(res.body.data.includes(code), code);
      assert.deepEqual(res.body.data, [...DISCIPLINES]);
    });

    test('401 without a token or with a bad one', () => assertUnauthenticated('GET', '/therapist-discipline'));
  });

  describe('GET /master/setting-list', () => {
    test('answers the settings object', async () => {
      const u = await registerUser(server);
      const res = await server.api('GET', '/master/setting-list', { token: u.token });
      assert.equal(res.status, 200);
      assert.equal(res.body.status, true);
      assert.equal(typeof res.body.data, 'object');
      assert.ok(res.body.data !== null && !Array.isArray(res.body.data));
      assert.deepEqual(res.body.data.disciplines, [...DISCIPLINES]);
      assert.equal(res.body.data.password_min_length, 8);
    });

    test('401 without a token or with a bad one', () => assertUnauthenticated('GET', '/master/setting-list'));
  });
});
