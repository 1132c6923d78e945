/**
 * The first screen kept beside the device database (storage/first-screen.ts), below the client
 * (no server, so database-independent): kept sealed, deleted before every write reaches the
 * database, not kept when a write overlapped the read, read again once writes settle, gone
 * after a key rotation and after a schema upgrade at open.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { readFirstScreen } from '../../client-lib/src/client/create-client.ts';
import { FIRST_SCREEN_FILE } from '../../client-lib/src/platform/device-key-node.ts';
import type { LocalDb } from '../../client-lib/src/storage/local-db.ts';
import { MIGRATIONS } from '../../client-lib/src/storage/local-schema.ts';
import { encodingsOf } from './device-bytes.ts';
import { openDeviceDb, tempDataDir } from './support.ts';

type Screen = { names: string[] };

/** The reader: what the database answers now (names kept in `meta`, clear for the test). */
const namesOf = (db: LocalDb) => async (): Promise<Screen> => ({
  names: (await db.query<{ key: string }>(`select key from meta where key like 'name:%' order by key`)).map((r) => r.key.slice(5)),
});

async function until<T>(what: string, probe: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (ok(v)) return v;
    if (Date.now() > end) throw new Error(`${what}: still ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

test('the first screen is kept sealed, deleted before a write, and read again once writes settle', { timeout: 120_000 }, async () => {
  const dir = tempDataDir();
  const canary = `Firstscreen${randomUUID().slice(0, 8)}`;
  const db = await openDeviceDb(dir);
  try {
    await db.query(`insert into meta (key, value) values ($1, '1')`, [`name:${canary}`]);
    assert.deepEqual(await db.firstScreen.read(namesOf(db)), { names: [canary] });
    assert.deepEqual(await readFirstScreen<Screen>(dir), { names: [canary] });
    // Sealed: the kept file holds no clear PHI (the canary is in the database's own files, in meta).
    const sealed = fs.readFileSync(path.join(dir, FIRST_SCREEN_FILE));
    assert.deepEqual(encodingsOf(canary).filter((e) => sealed.includes(e.bytes)).map((e) => e.how), []);

    // A write: by the time the statement has run, the kept screen is gone (deleted first).
    await db.query(`insert into meta (key, value) values ('name:Zed', '1')`);
    assert.equal(await readFirstScreen<Screen>(dir), null);
    // Once the database is quiet the reader runs again: the kept screen is what it answers now.
    await until('kept again', () => readFirstScreen<Screen>(dir), (v) => v !== null);
    assert.deepEqual(await readFirstScreen<Screen>(dir), { names: [canary, 'Zed'] });

    // A transaction counts as a write; reads and the feed's staging do not.
    await db.transaction(async (tx) => void (await tx.query(`delete from meta where key = 'name:Zed'`)));
    assert.equal(await readFirstScreen<Screen>(dir), null);
    await until('kept after the transaction', () => readFirstScreen<Screen>(dir), (v) => v !== null);
    assert.deepEqual(await readFirstScreen<Screen>(dir), { names: [canary] });
    await db.query(`with m as (select key from meta) select count(*) from m`);
    await db.query(`insert into feed_staging (kind) values ('reset')`);
    await db.query('delete from feed_staging');
    assert.deepEqual(await readFirstScreen<Screen>(dir), { names: [canary] });
    // A `with` that changes data is a write.
    await db.query(`with d as (delete from meta where key = $1 returning key) select count(*) from d`, [`name:${canary}`]);
    assert.equal(await readFirstScreen<Screen>(dir), null);
    await until('kept after the with-delete', () => readFirstScreen<Screen>(dir), (v) => v !== null);
    assert.deepEqual(await readFirstScreen<Screen>(dir), { names: [] });
  } finally {
    await db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a read that a write overlapped is not kept; the reader runs again after the write', { timeout: 120_000 }, async () => {
  const dir = tempDataDir();
  const db = await openDeviceDb(dir);
  try {
    await db.query(`insert into meta (key, value) values ('name:Ann', '1')`);
    let writeDuringRead = true;
    const reader = async (): Promise<Screen> => {
      const before = await namesOf(db)();
      if (writeDuringRead) {
        writeDuringRead = false;
        // The answer above is already out of date when the read ends.
        await db.query(`insert into meta (key, value) values ('name:Bob', '1')`);
      }
      return before;
    };
    assert.deepEqual(await db.firstScreen.read(reader), { names: ['Ann'] });
    assert.equal(await readFirstScreen<Screen>(dir), null, 'an overlapped read must not be kept');
    await until('kept after the write', () => readFirstScreen<Screen>(dir), (v) => v !== null);
    assert.deepEqual(await readFirstScreen<Screen>(dir), { names: ['Ann', 'Bob'] });

    // A reader answering null (signed out) keeps nothing.
    await db.query(`delete from meta where key like 'name:%'`);
    assert.equal(await db.firstScreen.read(async () => null), null);
    await new Promise((r) => setTimeout(r, 800));
    assert.equal(await readFirstScreen<Screen>(dir), null);
  } finally {
    await db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a kept first screen does not outlive a key rotation or a schema upgrade at open', { timeout: 120_000 }, async () => {
  const dir = tempDataDir();
  let db = await openDeviceDb(dir);
  try {
    await db.query(`insert into meta (key, value) values ('name:Cy', '1')`);
    await db.firstScreen.read(namesOf(db));
    assert.deepEqual(await readFirstScreen<Screen>(dir), { names: ['Cy'] });
    await db.close();

    // Reopened at the current version: nothing changes, the kept screen stays.
    db = await openDeviceDb(dir);
    assert.deepEqual(await readFirstScreen<Screen>(dir), { names: ['Cy'] });
    // An older schema version (the last migration is safe to run again): opening migrates, which
    // deletes the kept screen before it changes anything.
    const file = path.join(dir, FIRST_SCREEN_FILE);
    const keptBefore = fs.readFileSync(file);
    await db.query('update local_schema_version set version = $1', [MIGRATIONS.length - 1]);
    await db.close();
    // (That update was a write and deleted it: put back, as an app that stopped before it would have left it.)
    fs.writeFileSync(file, keptBefore);
    assert.deepEqual(await readFirstScreen<Screen>(dir), { names: ['Cy'] });
    db = await openDeviceDb(dir);
    assert.equal(await readFirstScreen<Screen>(dir), null, 'a migration at open must delete the kept screen');
    const [v] = await db.query<{ version: number }>('select version from local_schema_version');
    assert.equal(v?.version, MIGRATIONS.length);

    // Kept again, then the key rotated (sign-out): sealed with the old key, it no longer opens.
    await db.query(`delete from meta where key like 'name:%'`);
    await db.firstScreen.read(namesOf(db));
    const kept = fs.readFileSync(file);
    await db.rotateKey();
    fs.writeFileSync(file, kept);
    assert.equal(await readFirstScreen<Screen>(dir), null);
  } finally {
    await db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
