/**
 * PHI at rest: a canary planted in every PHI field through the API must not appear anywhere
 * in the raw database bytes — the whole PGlite data dir (heap, indexes, WAL), or on
 * PostgreSQL the table files read by the server itself and every row as text — while a value
 * stored in clear on purpose is found (the scan can fail). Then a key rotation moves every
 * value to the new key id, and everything still reads back through the API.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { PGlite } from '@electric-sql/pglite';
import { operationContext, runOperation } from '@fieldchart/server';
import { createPhiRotation } from '../../server/src/services/keys/phi-rotation.ts';
import { PHI_TABLES } from '../../server/src/services/phi-columns.ts';
import { indexKeyIdOf, parseKeyFile, phiKeyFileOf, rotateKeyFile } from '../../server/src/security/phi-keyring.ts';
import { forEachBackend } from '../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';

const tag = randomBytes(4).toString('hex').toUpperCase();
const canary = (field: string) => `CANARY${field}${tag}`;

/** A tiny PNG (magic, IHDR, a tEXt chunk carrying a canary): the signature the API accepts. */
function signaturePng(): string {
  const ihdr = Buffer.concat([Buffer.from([0, 0, 0, 13]), Buffer.from('IHDR'), Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0]), Buffer.alloc(4)]);
  const text = Buffer.from(`Comment\0${canary('SIGNATURE')}`);
  const chunk = Buffer.concat([Buffer.alloc(4), Buffer.from('tEXt'), text, Buffer.alloc(4)]);
  chunk.writeUInt32BE(text.length, 0);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), ihdr, chunk]).toString('base64');
}

const rowsOf = (r: unknown): Array<Record<string, unknown>> => (Array.isArray(r) ? r : ((r as { rows: [] }).rows ?? []));

forEachBackend('PHI at rest', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  const planted = {
    first: canary('FIRSTNAME'),
    last: canary('LASTNAME'),
    email: `${canary('EMAIL').toLowerCase()}@example.test`,
    phone: canary('PHONE'),
    address: canary('ADDRESS'),
    visitAddress: canary('VISITADDRESS'),
    visitNotes: canary('VISITNOTES'),
    subjective: canary('SUBJECTIVE'),
    objective: canary('OBJECTIVE'),
    assessment: canary('ASSESSMENT'),
    plan: canary('PLAN'),
    homeBase: canary('HOMEBASE'),
  };
  const signature = signaturePng();
  const control = `CLEARCONTROL${tag}`;
  let token = '';
  let patientUuid = '';
  let scheduleUuid = '';

  async function rawBytes(): Promise<Buffer> {
    const { database } = server.runtime;
    if (database.pglite) {
      const pglite = database.pglite as PGlite;
      await pglite.query('checkpoint');
      return Buffer.from(await (await pglite.dumpDataDir('none')).arrayBuffer());
    }
    const psql = database.sql!;
    await psql`checkpoint`;
    const parts: Buffer[] = [];
    for (const table of ['patients', 'patient_referrals', 'visits', 'soap_notes', 'idempotency_keys', 'audit_log', 'scheduling_policies']) {
      const files = await psql`
        select pg_relation_filepath(c.oid) as path from pg_class c
        where c.oid = ${table}::regclass or c.oid = (select reltoastrelid from pg_class where oid = ${table}::regclass)
           or c.oid in (select indexrelid from pg_index where indrelid = ${table}::regclass)`;
      for (const f of files) {
        if (!f.path) continue;
        const [r] = await psql`select pg_read_binary_file(${f.path as string}) as bytes`;
        parts.push(Buffer.from(r!.bytes as Uint8Array));
      }
      const rows = await psql.unsafe(`select t::text as row from ${table} t`);
      parts.push(Buffer.from(rows.map((r) => r.row as string).join('\n')));
    }
    return Buffer.concat(parts);
  }

  test('a canary in every PHI field is absent from the raw database bytes; a clear control value is found', async () => {
    const me = await registerUser(server);
    token = me.token;
    const created = await server.api('POST', '/patient/create', {
      token,
      headers: { 'idempotency-key': `phi-${tag}` },
      body: {
        first_name: planted.first,
        last_name: planted.last,
        email: planted.email,
        phone: planted.phone,
        address: planted.address,
        referral: { referral_source: control },
      },
    });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    patientUuid = created.body.data.uuid;
    // More rows than the rotation's batch size, in both key shapes (uuid id; scope + key).
    for (const n of [1, 2]) {
      const more = await server.api('POST', '/patient/create', { token, headers: { 'idempotency-key': `more-${n}-${tag}` }, body: { first_name: `Extra${n}`, last_name: 'Row' } });
      assert.equal(more.status, 200);
    }
    const scheduled = await server.api('POST', '/schedule-visit-request-save', {
      token,
      body: { patient_uuid: patientUuid, visit_date: '2026-03-02', start_time: '09:30', address: planted.visitAddress, notes: planted.visitNotes },
    });
    assert.equal(scheduled.status, 200, JSON.stringify(scheduled.body));
    scheduleUuid = scheduled.body.data.uuid;
    const note = await server.api('POST', '/patient-referral-end-visit-note', {
      token,
      body: {
        schedule_uuid: scheduleUuid,
        subjective: planted.subjective,
        objective: planted.objective,
        assessment: planted.assessment,
        plan: planted.plan,
        vital_signs: { heart_rate: 187 },
        signature,
      },
    });
    assert.equal(note.status, 200, JSON.stringify(note.body));
    const policy = await server.api('PUT', '/scheduling/policy', { token, body: { home_base_address: planted.homeBase } });
    assert.equal(policy.status, 200, JSON.stringify(policy.body));

    const bytes = await rawBytes();
    assert.ok(bytes.includes(Buffer.from(control)), 'the control value stored in clear is found: the scan sees table data');
    for (const [field, value] of Object.entries(planted)) {
      for (const form of new Set([value, value.toLowerCase()])) {
        assert.ok(!bytes.includes(Buffer.from(form)), `${field} is in the raw database bytes`);
      }
    }
    assert.ok(!bytes.includes(Buffer.from(signature.slice(0, 40))), 'the signature is in the raw database bytes');
    assert.ok(!bytes.includes(Buffer.from(canary('SIGNATURE'))));
  });

  test('rotation puts every value under the new key id; everything reads back; a second run has nothing left', async () => {
    assert.ok(token, 'runs after the canary test');
    const ctx = operationContext(server.runtime.services, server.runtime.database);
    type IndexStatus = { key_id: string; previous_key_ids: string[]; stale_patients: number; stale_geocode_cache: number };
    const before = (await runOperation(ctx, 'keys.status', {})) as { current_key_id: string; not_current: number; index: IndexStatus };
    assert.equal(before.not_current, 0);
    assert.deepEqual({ ...before.index, key_id: '' }, { key_id: '', previous_key_ids: [], stale_patients: 0, stale_geocode_cache: 0 });
    const rotated = (await runOperation(ctx, 'keys.rotate', { batch_size: 2 })) as {
      rotated: boolean;
      key_id: string;
      previous_key_id: string;
      total: number;
      failed: number;
      index_key_id: string;
      retokenised: number;
    };
    assert.equal(rotated.rotated, true);
    assert.equal(rotated.previous_key_id, before.current_key_id);
    assert.notEqual(rotated.key_id, before.current_key_id);
    assert.ok(rotated.total >= 13, `re-encrypted ${rotated.total}`);
    assert.equal(rotated.failed, 0);
    assert.notEqual(rotated.index_key_id, before.index.key_id, 'the blind-index key rotates too');
    assert.ok(rotated.retokenised >= 1, `patients tokenised again: ${rotated.retokenised}`);
    assert.equal(fs.statSync(phiKeyFileOf(server.dataDir)).mode & 0o777, 0o600);

    const { db } = server.runtime.database;
    for (const t of PHI_TABLES) {
      for (const column of t.columns) {
        const rows = rowsOf(await db.execute(sql`select ${sql.identifier(column)} as v from ${sql.identifier(t.table)} where ${sql.identifier(column)} is not null`));
        for (const r of rows) assert.ok(String(r.v).startsWith(`fc1.${rotated.key_id}.`), `${t.table}.${column} not under the new key`);
      }
    }
    const status = (await runOperation(ctx, 'keys.status', {})) as { not_current: number; keys: Array<{ id: string; values: number }>; index: IndexStatus };
    assert.equal(status.not_current, 0);
    assert.equal(status.keys.find((k) => k.id === before.current_key_id)?.values, 0);
    assert.deepEqual(status.index, { key_id: rotated.index_key_id, previous_key_ids: [before.index.key_id], stale_patients: 0, stale_geocode_cache: 0 });
    const keys = rowsOf(await db.execute(sql`select distinct name_search_key as k from patients`)).map((r) => r.k);
    assert.deepEqual(keys, [rotated.index_key_id], 'every patient tokenised under the new index key');

    const list = await server.api('GET', `/patient/my-patients?search_by_name=${encodeURIComponent(planted.first.slice(0, 10).toLowerCase())}`, { token });
    assert.equal(list.body.data.length, 1, 'search works on the tokens made again');
    assert.deepEqual(
      [list.body.data[0].first_name, list.body.data[0].last_name, list.body.data[0].email, list.body.data[0].phone, list.body.data[0].address],
      [planted.first, planted.last, planted.email, planted.phone, planted.address],
    );
    const details = await server.api('GET', `/visit-details/${scheduleUuid}`, { token });
    assert.equal(details.status, 200);
    assert.equal(details.body.data.soap_note.assessment, planted.assessment);
    const visits = await server.api('POST', `/patient/get-scheduled-visits/${list.body.data[0].referral_uuid}`, { token, body: {} });
    assert.equal(visits.body.data[0].address, planted.visitAddress);
    const replay = await server.api('POST', '/patient/create', { token, headers: { 'idempotency-key': `phi-${tag}` }, body: {
      first_name: planted.first, last_name: planted.last, email: planted.email, phone: planted.phone, address: planted.address, referral: { referral_source: control },
    } });
    assert.equal(replay.headers.get('idempotent-replayed'), 'true', 'the stored response was re-encrypted and replays');
    assert.equal(replay.body.data.uuid, patientUuid);

    assert.equal((await server.api('GET', '/scheduling/policy', { token })).body.data.home_base_address, planted.homeBase);

    const again = (await runOperation(ctx, 'keys.reencrypt', {})) as { total: number; retokenised: number };
    assert.equal(again.total, 0, 'idempotent: nothing left to re-encrypt');
    assert.equal(again.retokenised, 0, 'idempotent: nothing left to tokenise again');
    const trail = (await runOperation(ctx, 'audit.export', {})) as Array<{ action: string; resource_type: string; outcome: string; details: Record<string, unknown> }>;
    const rotation = trail.find((e) => e.action === 'rotate' && e.details.to === rotated.key_id);
    assert.equal(rotation?.outcome, 'success');
    assert.ok(!JSON.stringify(trail).includes(tag), 'no canary in the audit trail');
  });

  test('with PHI_KEYS from the environment, rotate changes nothing and answers the PHI_KEYS to deploy', async () => {
    const { services, database } = server.runtime;
    const file = JSON.parse(fs.readFileSync(phiKeyFileOf(server.dataDir), 'utf8'));
    const rotation = createPhiRotation({ db: database.db, config: { ...server.config, phiKeys: JSON.stringify(file) }, phi: services.phi, audit: services.audit });
    const r = await rotation.rotate();
    assert.equal(r.rotated, false);
    if (r.rotated) return;
    const next = JSON.parse(r.phi_keys);
    assert.equal(next.current, r.new_key_id);
    assert.deepEqual(next.keys.slice(0, -1), file.keys, 'the old keys stay in the ring');
    assert.notEqual(next.index_key, file.index_key, 'a new blind-index key');
    assert.deepEqual(next.previous_index_keys, [...(file.previous_index_keys ?? []), file.index_key], 'the old one stays, searched, until the rows are tokenised again');
    assert.equal(services.phi.ring().currentKeyId, file.current, 'the running ring is unchanged');
  });

  test('with the key file deleted, status and rotate refuse and do not create one', async () => {
    const { services, database } = server.runtime;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fc-phi-keys-'));
    try {
      const keyFile = phiKeyFileOf(dataDir);
      fs.mkdirSync(path.dirname(keyFile), { recursive: true });
      fs.copyFileSync(phiKeyFileOf(server.dataDir), keyFile);
      fs.rmSync(keyFile);
      const rotation = createPhiRotation({ db: database.db, config: { ...server.config, phiKeys: null, dataDir }, phi: services.phi, audit: services.audit });
      const before = services.phi.ring().currentKeyId;
      await assert.rejects(rotation.status(), { code: 'phi_key_file_missing' });
      assert.equal(fs.existsSync(keyFile), false, 'status created a key file');
      await assert.rejects(rotation.rotate(), { code: 'phi_key_file_missing' });
      assert.equal(fs.existsSync(keyFile), false, 'rotate created a key file');
      assert.equal(services.phi.ring().currentKeyId, before, 'the running ring is unchanged');
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  // Last: it leaves the running ring on keys that are not in the data dir's file.
  test('a PHI_KEYS deploy mid-rotation: patients under the old index key and the new are both found; reencrypt moves them and drops the old geocode entries; then the old key may go', async () => {
    assert.ok(token, 'runs after the canary test');
    const { services, database } = server.runtime;
    const { db } = database;
    const search = async (name: string) => {
      const r = await server.api('GET', `/patient/my-patients?search_by_name=${encodeURIComponent(name)}`, { token });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return (r.body.data as Array<{ uuid: string }>).map((p) => p.uuid);
    };
    const create = async (first: string) => {
      const r = await server.api('POST', '/patient/create', { token, body: { first_name: first, last_name: `Index${tag}` } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return r.body.data.uuid as string;
    };
    const file = parseKeyFile(fs.readFileSync(phiKeyFileOf(server.dataDir), 'utf8'), 'key file');
    const old = await create(`Oldkey${tag}`);
    const oldIndexKeyId = services.phi.ring().indexKeyId;
    // A geocode entry keyed under the old index key: after the rotation nothing can find it.
    await db.execute(sql`insert into geocode_cache (address_key, source, point_enc, index_key_id) values (${`stale-${tag}`}, 'nominatim', null, ${oldIndexKeyId})`);

    // The new PHI_KEYS deployed (what `keys rotate` answers with PHI_KEYS set), nothing re-encrypted yet.
    const next = rotateKeyFile(file);
    services.phi.install(next);
    const rotation = createPhiRotation({ db, config: { ...server.config, phiKeys: JSON.stringify(next) }, phi: services.phi, audit: services.audit });
    const fresh = await create(`Newkey${tag}`);
    assert.deepEqual(await search(`oldkey${tag}`.toLowerCase()), [old], 'a patient tokenised under the old index key is found');
    assert.deepEqual(await search(`newkey${tag}`.toLowerCase()), [fresh], 'a patient tokenised under the new one is found');
    assert.deepEqual((await search(`index${tag}`.toLowerCase())).sort(), [old, fresh].sort(), 'one term, rows under either key');
    const during = await rotation.status();
    assert.deepEqual(during.index.previous_key_ids, [...(file.previous_index_keys ?? []).map(indexKeyIdOf), oldIndexKeyId]);
    assert.ok(during.index.stale_patients >= 1, `stale patients: ${during.index.stale_patients}`);
    assert.equal(during.index.stale_geocode_cache, 1);

    const done = await rotation.reencrypt({ batchSize: 1 });
    assert.ok(done.retokenised >= 1 && done.retokenised === during.index.stale_patients, `retokenised ${done.retokenised} of ${during.index.stale_patients}`);
    assert.equal(done.geocode_cache_dropped, 1);
    assert.equal(done.failed, 0);
    const after = await rotation.status();
    assert.deepEqual([after.index.stale_patients, after.index.stale_geocode_cache], [0, 0]);
    assert.equal(rowsOf(await db.execute(sql`select 1 from geocode_cache where address_key = ${`stale-${tag}`}`)).length, 0);

    // Every row under the new key: the old index key leaves the ring, and search still finds both.
    services.phi.install({ ...next, previous_index_keys: [] });
    assert.deepEqual((await search(`index${tag}`.toLowerCase())).sort(), [old, fresh].sort());
    assert.deepEqual(await search(`oldkey${tag}`.toLowerCase()), [old]);
  });
});
