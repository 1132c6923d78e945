/**
 * Patients: create (with the referral it opens), update, the paginated list and the
 * blind-index name search, Idempotency-Key on create, and the errors the spec lists.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { createPatient } from './patient-fixtures.ts';

forEachBackend('patients: records', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('create answers {uuid, referral_uuid}; the list carries both, the contact details and the referral discipline', async () => {
    const me = await registerUser(server);
    const res = await server.api('POST', '/patient/create', {
      token: me.token,
      body: {
        first_name: ' Ana ',
        last_name: 'Lima',
        email: 'ana@example.test',
        phone: '+1 555 0100',
        address: '12 Elm St, Springfield, IL 62701',
        referral: { discipline: 'PT', diagnosis_codes: ['m17.11'], ordered_frequency: '2W4', start_of_care: '2026-01-05' },
      },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, true);
    const { uuid, referral_uuid } = res.body.data;
    assert.match(uuid, /^[0-9a-f-]{36}$/);
    assert.match(referral_uuid, /^[0-9a-f-]{36}$/);

    const list = await server.api('GET', '/patient/my-patients', { token: me.token });
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.meta, { current_page: 1, per_page: 20, total: 1, last_page: 1 });
    const [p] = list.body.data;
    assert.equal(p.uuid, uuid);
    assert.equal(p.referral_uuid, referral_uuid);
    assert.equal(p.first_name, 'Ana', 'trimmed');
    assert.equal(p.full_name, 'Ana Lima');
    assert.equal(p.email, 'ana@example.test');
    assert.equal(p.phone, '+1 555 0100');
    assert.equal(p.address, '12 Elm St, Springfield, IL 62701');
    assert.equal(p.discipline, 'PT');
    assert.equal(p.next_visit, null);
    assert.equal(p.last_visit_date, null);
    assert.ok(!Number.isNaN(Date.parse(p.created_at)));

    const minimal = await createPatient(server, me.token, { first_name: 'Bo', last_name: 'Chen' });
    const again = await server.api('GET', '/patient/my-patients', { token: me.token });
    assert.equal(again.body.data[0].uuid, minimal.uuid, 'newest first');
    assert.equal(again.body.data[0].email, null);
  });

  test('create: 422 names the invalid fields; 401 without a token', async () => {
    const me = await registerUser(server);
    const bad = await server.api('POST', '/patient/create', {
      token: me.token,
      body: { first_name: '  ', email: 'not-an-email', referral: { diagnosis_codes: ['nope'], ordered_frequency: 'often' } },
    });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.status, false);
    for (const field of ['first_name', 'last_name', 'email']) assert.ok(Object.keys(bad.body.errors).some((k) => k.startsWith(field)), field);
    assert.ok(Object.keys(bad.body.errors).some((k) => k.startsWith('referral')));
    assert.equal((await server.api('POST', '/patient/create', { body: { first_name: 'A', last_name: 'B' } })).status, 401);
    for (const path of ['/patient/my-patients', '/patient/general-summary', '/document/list', `/patient/chart-details/${randomUUID()}`]) {
      assert.equal((await server.api('GET', path)).status, 401, path);
    }
    assert.equal((await server.api('PUT', `/patient/update/${randomUUID()}`, { body: {} })).status, 401);
    assert.equal((await server.api('POST', `/patient/get-scheduled-visits/${randomUUID()}`, { body: {} })).status, 401);
  });

  test('update changes the given fields, clears with null, re-tokenises the names; 404 unknown, malformed or foreign; 422', async () => {
    const me = await registerUser(server);
    const other = await registerUser(server);
    const { uuid } = await createPatient(server, me.token, { first_name: 'Maria', last_name: 'Gomez', phone: '555-1', email: 'm@example.test' });
    const res = await server.api('PUT', `/patient/update/${uuid}`, { token: me.token, body: { last_name: 'Ortega', phone: null } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.status, true);
    assert.equal(typeof res.body.message, 'string');
    const [p] = (await server.api('GET', '/patient/my-patients', { token: me.token })).body.data;
    assert.equal(p.last_name, 'Ortega');
    assert.equal(p.first_name, 'Maria');
    assert.equal(p.phone, null);
    assert.equal(p.email, 'm@example.test');
    const search = async (q: string) =>
      (await server.api('GET', `/patient/my-patients?search_by_name=${encodeURIComponent(q)}`, { token: me.token })).body.data.length;
    assert.equal(await search('ort'), 1, 'the new name is searchable');
    assert.equal(await search('gom'), 0, 'the old name is gone from the index');

    for (const id of [randomUUID(), 'not-a-uuid']) {
      const miss = await server.api('PUT', `/patient/update/${id}`, { token: me.token, body: { first_name: 'X' } });
      assert.equal(miss.status, 404, id);
      assert.equal(miss.body.code, 'patient_not_found');
    }
    const foreign = await server.api('PUT', `/patient/update/${uuid}`, { token: other.token, body: { first_name: 'X' } });
    assert.equal(foreign.status, 404);
    assert.deepEqual(foreign.body, (await server.api('PUT', `/patient/update/${randomUUID()}`, { token: other.token, body: { first_name: 'X' } })).body);
    const invalid = await server.api('PUT', `/patient/update/${uuid}`, { token: me.token, body: { first_name: '', email: 'x' } });
    assert.equal(invalid.status, 422);
    assert.ok(invalid.body.errors.first_name && invalid.body.errors.email);
  });

  test('pagination: per_page and page with meta {current_page, per_page, total, last_page}; 422 out of range', async () => {
    const me = await registerUser(server);
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await createPatient(server, me.token, { first_name: `P${i}`, last_name: 'Page' })).uuid);
    const page = async (q: string) => (await server.api('GET', `/patient/my-patients?${q}`, { token: me.token })).body;
    const p1 = await page('per_page=2&page=1');
    const p3 = await page('per_page=2&page=3');
    assert.deepEqual(p1.meta, { current_page: 1, per_page: 2, total: 5, last_page: 3 });
    assert.deepEqual(p3.meta, { current_page: 3, per_page: 2, total: 5, last_page: 3 });
    const seen = [...p1.data, ...(await page('per_page=2&page=2')).data, ...p3.data].map((p: { uuid: string }) => p.uuid);
    assert.deepEqual(seen, [...made].reverse(), 'every patient once, newest first');
    assert.deepEqual((await page('per_page=2&page=9')).data, []);
    for (const q of ['per_page=0', 'per_page=2.5', 'page=0', 'page=x']) {
      assert.equal((await server.api('GET', `/patient/my-patients?${q}`, { token: me.token })).status, 422, q);
    }
    // Page sizes above the largest are served at the largest, however large.
    for (const q of ['per_page=101', 'per_page=100000000000000000000000']) {
      const clamped = await server.api('GET', `/patient/my-patients?${q}`, { token: me.token });
      assert.equal(clamped.status, 200, q);
      assert.deepEqual(clamped.body.meta, { current_page: 1, per_page: 100, total: 5, last_page: 1 }, q);
    }
  });

  test('search_by_name: case- and accent-insensitive word prefixes, every word must match; others never see them', async () => {
    const me = await registerUser(server);
    const jose = await createPatient(server, me.token, { first_name: 'José', last_name: 'Álvarez-Núñez' });
    const josie = await createPatient(server, me.token, { first_name: 'Josie', last_name: 'Park' });
    const ann = await createPatient(server, me.token, { first_name: 'Ann Marie', last_name: "O'Brien" });
    const find = async (q: string, token = me.token) =>
      ((await server.api('GET', `/patient/my-patients?search_by_name=${encodeURIComponent(q)}`, { token })).body.data as Array<{ uuid: string }>)
        .map((p) => p.uuid)
        .sort();
    const ids = (...ps: Array<{ uuid: string }>) => ps.map((p) => p.uuid).sort();
    assert.deepEqual(await find('jose'), ids(jose));
    assert.deepEqual(await find('JOSÉ'), ids(jose));
    assert.deepEqual(await find('jos'), ids(jose, josie));
    assert.deepEqual(await find('nunez'), ids(jose), 'hyphenated names are two words');
    assert.deepEqual(await find('alv jo'), ids(jose), 'every word matches, in any order');
    assert.deepEqual(await find('jos park'), ids(josie));
    assert.deepEqual(await find('marie obrien'.replace('obrien', 'o brien')), ids(ann));
    assert.deepEqual(await find('mar o'), ids(ann), 'one-letter words are ignored beside longer ones');
    assert.deepEqual(await find('zzz'), []);
    assert.deepEqual(await find('jose park'), [], 'no patient has both');
    assert.deepEqual(await find('os'), [], 'prefixes, not substrings');
    const meta = (await server.api('GET', '/patient/my-patients?search_by_name=jos&per_page=1', { token: me.token })).body.meta;
    assert.deepEqual(meta, { current_page: 1, per_page: 1, total: 2, last_page: 2 });

    const other = await registerUser(server);
    assert.deepEqual(await find('jos', other.token), []);
    assert.equal((await server.api('GET', '/patient/my-patients', { token: other.token })).body.meta.total, 0);
  });

  test('Idempotency-Key: a repeat replays the first answer and creates nothing; another body under the key is 422', async () => {
    const me = await registerUser(server);
    const key = randomUUID();
    const body = { first_name: 'Ida', last_name: 'Potent' };
    const first = await server.api('POST', '/patient/create', { token: me.token, body, headers: { 'idempotency-key': key } });
    const second = await server.api('POST', '/patient/create', { token: me.token, body, headers: { 'idempotency-key': key } });
    assert.equal(first.status, 200);
    assert.deepEqual(second.body, first.body);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal((await server.api('GET', '/patient/my-patients', { token: me.token })).body.meta.total, 1);
    const reused = await server.api('POST', '/patient/create', { token: me.token, body: { ...body, last_name: 'Other' }, headers: { 'idempotency-key': key } });
    assert.equal(reused.status, 422);
    assert.equal(reused.body.code, 'idempotency_key_reused');
  });
});
