/**
 * The device key below the client (no server, so database-independent): a device database
 * from before encryption is sealed on its first open and its clear copies leave the files; a
 * database without its key, or with another key, does not open (`storage_key_lost`); a sealed
 * value moved to another row does not open.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import * as Y from 'yjs';
import { KEY_FILE } from '../../client-lib/src/platform/device-key-node.ts';
import { loadDraftUpdates } from '../../client-lib/src/storage/draft-store.ts';
import { readFeedRows } from '../../client-lib/src/storage/feed-store.ts';
import { MIGRATIONS } from '../../client-lib/src/storage/local-schema.ts';
import { getMeta } from '../../client-lib/src/storage/meta.ts';
import { listFailures, listRejections, overlayEntries } from '../../client-lib/src/storage/outbox.ts';
import { SealBrokenError } from '../../client-lib/src/storage/row-cipher.ts';
import { StorageError } from '../../client-lib/src/storage/storage-errors.ts';
import { findTexts } from './device-bytes.ts';
import { openDeviceDb, tempDataDir } from './support.ts';

/** A device database as the client before encryption left it (schema version 2), with PHI in every place. */
async function legacyDevice(dir: string, c: Record<'first' | 'email' | 'phone' | 'rejected' | 'parked' | 'draft' | 'staged', string>, doc: string): Promise<void> {
  // PGlite's own initdb, as that client ran it: 16 MB log segments, which the scrub must clear too.
  const pg = await PGlite.create(dir);
  try {
    await pg.exec(MIGRATIONS[0] as string);
    await pg.exec(MIGRATIONS[1] as string);
    await pg.exec('create table local_schema_version (version integer not null); insert into local_schema_version values (2)');
    const patient = randomUUID();
    const session = { token: 't', refresh_token: 'r', expires_at: 1, user_id: randomUUID(), email: c.email };
    await pg.query(`insert into meta (key, value) values ('client_id', $1), ('next_mutation_id', '4'), ('session', $2)`, [
      JSON.stringify(randomUUID()),
      JSON.stringify(session),
    ]);
    await pg.query(`insert into feed_rows (tbl, id, version, row, patient_uuid) values ('patients', $1, 1, $2, $1)`, [patient, JSON.stringify({ uuid: patient, first_name: c.first })]);
    await pg.query(`insert into feed_staging (kind, change) values ('change', $1)`, [JSON.stringify({ op: 'upsert', table: 'patients', id: patient, row: { first_name: c.staged } })]);
    await pg.query(`insert into outbox (mutation_id, name, args, client_time) values (2, 'patient.update', $1, '2026-01-01T00:00:00.000Z')`, [JSON.stringify({ uuid: patient, phone: c.phone })]);
    await pg.query(`insert into rejections (mutation_id, name, args, status, code, message, errors, rejected_at) values (1, 'patient.create', $1, 422, 'invalid', 'no', '{}', 'x')`, [
      JSON.stringify({ first_name: c.rejected }),
    ]);
    await pg.query(
      `insert into failures (mutation_id, name, args, client_time, code, message, attempts, failed_at) values (3, 'patient.create', $1, 'x', 'failed', 'no', 3, 'x')`,
      [JSON.stringify({ first_name: c.parked })],
    );
    const ydoc = new Y.Doc();
    ydoc.getText('plan').insert(0, c.draft);
    await pg.query(`insert into draft_updates (doc, "update") values ($1, $2)`, [doc, Y.encodeStateAsUpdate(ydoc)]);
  } finally {
    await pg.close();
  }
}

test('a device database from before encryption is sealed on its first open; the clear values leave its files', { timeout: 120_000 }, async () => {
  const tag = randomUUID().slice(0, 8);
  const c = {
    first: `Legacyname${tag}`,
    email: `canary.${tag}@example.org`,
    phone: `+1 555 ${tag}`,
    rejected: `Rejectedname${tag}`,
    parked: `Parkedname${tag}`,
    draft: `Legacy draft text ${tag}`,
    staged: `Stagedname${tag}`,
  };
  const doc = `visit:${randomUUID()}`;
  const dir = tempDataDir();
  try {
    await legacyDevice(dir, c, doc);
    assert.ok(findTexts(dir, [c.first]).length > 0, 'the fixture holds clear PHI');

    const db = await openDeviceDb(dir);
    try {
      assert.equal((await getMeta(db, 'session'))?.email, c.email);
      assert.deepEqual((await readFeedRows<{ first_name: string }>(db, `tbl = 'patients'`, [])).map((r) => r.row.first_name), [c.first]);
      assert.deepEqual((await overlayEntries(db)).map((e) => e.args.phone), [c.phone]);
      assert.deepEqual((await listRejections(db)).map((r) => [r.args.first_name, r.message]), [[c.rejected, 'no']]);
      assert.deepEqual((await listFailures(db)).map((f) => [f.args.first_name, f.message]), [[c.parked, 'no']]);
      const ydoc = new Y.Doc();
      for (const u of await loadDraftUpdates(db, doc)) Y.applyUpdate(ydoc, u);
      assert.equal(ydoc.getText('plan').toString(), c.draft);
      assert.deepEqual(await db.query('select count(*)::int as n from feed_staging'), [{ n: 0 }], 'a staged unit is dropped (the server sends it again)');
    } finally {
      await db.close();
    }
    assert.deepEqual(findTexts(dir, Object.values(c)), [], 'no clear PHI left in any file');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a data dir without its key file, or with another key, does not open: storage_key_lost', { timeout: 120_000 }, async () => {
  const dir = tempDataDir();
  const other = tempDataDir();
  try {
    await (await openDeviceDb(dir)).close();
    await (await openDeviceDb(other)).close();
    const keyFile = path.join(dir, KEY_FILE);
    const key = fs.readFileSync(keyFile);

    fs.copyFileSync(path.join(other, KEY_FILE), keyFile);
    await assert.rejects(openDeviceDb(dir), (err: unknown) => err instanceof StorageError && err.code === 'storage_key_lost');
    fs.rmSync(keyFile);
    await assert.rejects(openDeviceDb(dir), (err: unknown) => err instanceof StorageError && err.code === 'storage_key_lost');

    // Its own key back, with a loose mode (a copy): it opens, and the mode is 0600 again.
    fs.writeFileSync(keyFile, key, { mode: 0o644 });
    fs.chmodSync(keyFile, 0o644);
    await (await openDeviceDb(dir)).close();
    assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(other, { recursive: true, force: true });
  }
});

test('a sealed value moved to another row does not open', { timeout: 120_000 }, async () => {
  const db = await openDeviceDb('memory://');
  try {
    for (const id of ['a', 'b']) {
      await db.query(`insert into feed_rows (tbl, id, version, sealed) values ('patients', $1, 1, $2)`, [id, await db.cipher.seal(new TextEncoder().encode(`{"id":"${id}"}`), `feed_rows\u0000patients\u0000${id}`)]);
    }
    assert.deepEqual((await readFeedRows<{ id: string }>(db, `tbl = 'patients' order by id`, [])).map((r) => r.row.id), ['a', 'b']);
    await db.query(`update feed_rows set sealed = (select sealed from feed_rows where id = 'a') where id = 'b'`);
    await assert.rejects(readFeedRows(db, `tbl = 'patients' and id = 'b'`, []), SealBrokenError);
  } finally {
    await db.close();
  }
});
