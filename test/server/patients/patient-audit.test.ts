/**
 * The PHI access trail of the patients area: every read and write leaves a row with the
 * actor, their organization, the action, the resource, the outcome (not_found for a foreign
 * uuid too) and the request id — and never the PHI itself.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { operationContext, runOperation } from '@fieldchart/server';
import { forEachBackend } from '../../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { orgWithAdmin } from '../organizations/org-fixtures.ts';
import { createPatient } from './patient-fixtures.ts';

interface Entry {
  at: string;
  actor_user_id: string | null;
  organization_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string | null;
  outcome: string;
  request_id: string | null;
  details: Record<string, unknown>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

forEachBackend('patients: audit trail', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  const trailOf = async (actor: string) =>
    ((await runOperation(operationContext(server.runtime.services, server.runtime.database), 'audit.export', {})) as Entry[]).filter(
      (e) => e.actor_user_id === actor,
    );

  test('reads and writes are recorded with actor, organization, action, resource, outcome and request id; no PHI in details', async () => {
    const org = await orgWithAdmin(server);
    const me = org.admin;
    const secret = { first_name: `Zelda${randomUUID().slice(0, 6)}`, last_name: 'Quintessa', email: 'zq@example.test', phone: '555-0199', address: '9 Secret Ln' };
    const p = await createPatient(server, me.token, secret);
    await server.api('GET', `/patient/my-patients?search_by_name=${secret.first_name}`, { token: me.token });
    await server.api('PUT', `/patient/update/${p.uuid}`, { token: me.token, body: { phone: '555-0000' } });
    await server.api('GET', `/patient/chart-details/${p.referral_uuid}`, { token: me.token });
    await server.api('POST', `/patient/get-scheduled-visits/${p.referral_uuid}`, { token: me.token, body: {} });
    await server.api('GET', '/patient/general-summary', { token: me.token });
    await server.api('GET', '/document/list', { token: me.token });

    const trail = await trailOf(me.uuid);
    const find = (action: string, type: string) => trail.find((e) => e.action === action && e.resource_type === type);
    const created = find('create', 'patient');
    assert.ok(created, JSON.stringify(trail));
    assert.equal(created.resource_id, p.uuid);
    assert.equal(created.outcome, 'success');
    assert.equal(created.organization_id, org.uuid, "the actor's organization");
    assert.match(created.request_id ?? '', UUID);
    assert.equal(created.details.referral_uuid, p.referral_uuid);
    assert.deepEqual((created.details.fields as string[]).sort(), ['address', 'email', 'first_name', 'last_name', 'phone']);
    assert.ok(!Number.isNaN(Date.parse(created.at)));

    const listed = find('list', 'patient');
    assert.deepEqual([listed?.outcome, listed?.details.count, listed?.details.searched], ['success', 1, true]);
    assert.deepEqual(find('update', 'patient')?.details.fields, ['phone']);
    assert.equal(find('read', 'referral')?.resource_id, p.referral_uuid);
    assert.equal(find('list', 'visit')?.resource_id, p.referral_uuid);
    assert.ok(find('read', 'patient_summary'));
    assert.ok(find('list', 'document'));
    assert.equal(new Set(trail.map((e) => e.request_id)).size, trail.length, 'one request id per request');

    const text = JSON.stringify(trail);
    for (const value of [...Object.values(secret), '555-0000']) assert.ok(!text.includes(value), `${value} is in the audit trail`);
  });

  test("a foreign or unknown uuid is recorded as not_found under the caller's name", async () => {
    const owner = await registerUser(server);
    const intruder = await registerUser(server);
    const p = await createPatient(server, owner.token, { first_name: 'Own', last_name: 'Er' });
    assert.equal((await server.api('GET', `/patient/chart-details/${p.referral_uuid}`, { token: intruder.token })).status, 404);
    assert.equal((await server.api('PUT', `/patient/update/${p.uuid}`, { token: intruder.token, body: { first_name: 'X' } })).status, 404);
    const random = randomUUID();
    assert.equal((await server.api('POST', `/patient/get-scheduled-visits/${random}`, { token: intruder.token, body: {} })).status, 404);

    const trail = await trailOf(intruder.uuid);
    const outcome = (action: string, id: string) => trail.find((e) => e.action === action && e.resource_id === id)?.outcome;
    assert.equal(outcome('read', p.referral_uuid), 'not_found');
    assert.equal(outcome('update', p.uuid), 'not_found');
    assert.equal(outcome('list', random), 'not_found');
    assert.ok(trail.every((e) => e.organization_id === null), 'a solo clinician has no organization');
    assert.deepEqual((await trailOf(owner.uuid)).map((e) => e.action), ['create'], "the owner's trail shows only their own create");
  });
});
