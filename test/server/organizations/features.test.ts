/**
 * Effective configuration over HTTP: GET/PUT /my-organization/config, PUT
 * /my-settings/features, the back-office switch, and what seating and leaving do to it.
 * (Every rule's combinations are in effective-config.test.ts; this checks the wiring.)
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { EXPECTED_SOLO_DEFAULTS, memberOf, operate, orgWithAdmin } from './org-fixtures.ts';

const SOLO = EXPECTED_SOLO_DEFAULTS;
const TERMS = { patient: 'patient', visit: 'visit', note: 'visit note', organization: 'organization' };

forEachBackend('organizations: features and terminology', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  const config = async (token: string) => (await server.api('GET', '/my-organization/config', { token })).body.data;
  const putConfig = (token: string, body: unknown) => server.api('PUT', '/my-organization/config', { token, body });
  const putPersonal = (token: string, features: unknown) => server.api('PUT', '/my-settings/features', { token, body: { features } });

  test('a solo clinician: solo defaults, personal overrides, null clears one', async () => {
    const u = await registerUser(server);
    assert.deepEqual(await config(u.token), { source: 'solo', features: SOLO, terminology: TERMS });

    const set = await putPersonal(u.token, { billing_codes: true, ai_voice: false });
    assert.equal(set.status, 200);
    assert.deepEqual(set.body.data.features, { ...SOLO, billing_codes: true, ai_voice: false });
    assert.equal(set.body.data.source, 'solo');
    const cleared = await putPersonal(u.token, { ai_voice: null });
    assert.deepEqual(cleared.body.data.features, { ...SOLO, billing_codes: true });
    assert.deepEqual((await config(u.token)).features, { ...SOLO, billing_codes: true });
    assert.equal((await server.api('GET', '/my-organization/config')).status, 401);
  });

  test('PUT /my-settings/features: 422 naming organization-controlled and unknown keys, and non-booleans', async () => {
    const u = await registerUser(server);
    const res = await putPersonal(u.token, { earnings: true, credential_sync: true, teleport: true, billing_codes: 'yes' });
    assert.equal(res.status, 422);
    assert.deepEqual(Object.keys(res.body.errors).sort(), ['features.billing_codes', 'features.credential_sync', 'features.earnings', 'features.teleport']);
    for (const key of ['earnings', 'credential_sync', 'teleport', 'billing_codes']) assert.match(res.body.message, new RegExp(key));
    assert.match(res.body.errors['features.earnings'][0], /controlled by the organization/);
    assert.equal((await server.api('PUT', '/my-settings/features', { token: u.token, body: {} })).status, 422, 'features is required');
    assert.deepEqual((await config(u.token)).features, SOLO, 'nothing stored');
  });

  test('seated: personal overrides are ignored (and the answer says so); leaving brings them back', async () => {
    const org = await orgWithAdmin(server, { type: 'home_health_agency' });
    const u = await registerUser(server);
    await putPersonal(u.token, { copy_last_visit: true });
    await server.api('POST', `/organizations/${org.uuid}/join-request`, { token: u.token });
    const id = (await server.api('GET', '/my-organization/join-requests', { token: org.admin.token })).body.data[0].uuid;
    await server.api('POST', `/my-organization/join-requests/${id}/approve`, { token: org.admin.token });

    const seated = await config(u.token);
    assert.equal(seated.source, 'organization');
    assert.deepEqual(seated.features, { ...SOLO, follow_ups: true });
    const put = await putPersonal(u.token, { billing_codes: true });
    assert.equal(put.status, 200);
    assert.match(put.body.message, /organization/);
    assert.equal(put.body.data.features.billing_codes, false, 'the organization decides while seated');

    await server.api('POST', '/my-organization/leave', { token: u.token });
    assert.deepEqual((await config(u.token)).features, { ...SOLO, copy_last_visit: true, billing_codes: true });
  });

  test('PUT /my-organization/config: admins only; overrides, terminology, null clearing; members see the result', async () => {
    const org = await orgWithAdmin(server, { type: 'home_health_agency' });
    const member = await memberOf(server, org);
    const denied = await putConfig(member.token, { features: { billing_codes: true } });
    assert.equal(denied.status, 403);
    assert.equal((await putConfig((await registerUser(server)).token, { features: {} })).status, 403);

    const set = await putConfig(org.admin.token, {
      features: { billing_codes: true, follow_ups: false },
      terminology: { patient: '  client ', note: 'progress note' },
    });
    assert.equal(set.status, 200);
    assert.deepEqual(set.body.data.features, { ...SOLO, billing_codes: true });
    assert.deepEqual(set.body.data.terminology, { ...TERMS, patient: 'client', note: 'progress note' });
    assert.deepEqual(await config(member.token), set.body.data);

    const cleared = await putConfig(org.admin.token, { features: { follow_ups: null }, terminology: { note: null } });
    assert.equal(cleared.status, 200);
    assert.deepEqual(cleared.body.data.features, { ...SOLO, billing_codes: true, follow_ups: true }, 'back to the type default');
    assert.deepEqual(cleared.body.data.terminology, { ...TERMS, patient: 'client' });
    const mine = await server.api('GET', '/my-organization', { token: member.token });
    assert.deepEqual(mine.body.data.features, cleared.body.data.features);
  });

  test('PUT /my-organization/config: 422 naming unknown keys and non-boolean values; nothing is stored', async () => {
    const org = await orgWithAdmin(server);
    const res = await putConfig(org.admin.token, {
      features: { billing_codes: true, warp_drive: true, earnings: 'on' },
      terminology: { visit: 'encounter', clinician: 'therapist' },
    });
    assert.equal(res.status, 422);
    assert.deepEqual(Object.keys(res.body.errors).sort(), ['features.earnings', 'features.warp_drive', 'terminology.clinician']);
    assert.match(res.body.message, /warp_drive/);
    assert.match(res.body.message, /clinician/);
    assert.match(res.body.errors['features.earnings'][0], /true, false or null/);
    assert.equal((await putConfig(org.admin.token, { terminology: { visit: '' } })).status, 422);
    assert.deepEqual((await config(org.admin.token)).features, SOLO);
  });

  test('rules 5 and 6: credential_sync and coverage_sync stay off until the operator connects the back office', async () => {
    const org = await orgWithAdmin(server, { type: 'clinic' });
    const forced = await putConfig(org.admin.token, { features: { credential_sync: true } });
    assert.equal(forced.body.data.features.credential_sync, false, 'an override cannot beat rule 5');

    const staffing = await server.api('PUT', '/my-organization', { token: org.admin.token, body: { type: 'staffing_company' } });
    assert.equal(staffing.body.data.features.staffing_offers, true);
    assert.equal(staffing.body.data.features.coverage_sync, false);

    const connected = await operate(server, 'org.connect-back-office', { organization: org.uuid });
    assert.equal(connected.back_office_connected, true);
    const on = await config(org.admin.token);
    assert.equal(on.features.credential_sync, true);
    assert.equal(on.features.coverage_sync, true);

    await putConfig(org.admin.token, { features: { coverage_sync: false } });
    assert.equal((await config(org.admin.token)).features.coverage_sync, false, 'a stored override wins once connected');

    await operate(server, 'org.connect-back-office', { organization: org.uuid, disconnect: true });
    assert.equal((await config(org.admin.token)).features.credential_sync, false);
  });
});
