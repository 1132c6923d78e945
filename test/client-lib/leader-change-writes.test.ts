/**
 * The device database's writes when the tab leading it goes right after one committed
 * (storage/leader-change.ts): the caller hears `LeaderChangedError` and cannot know whether its
 * write is there. Modelled in Node with a file system whose sync after a write reports the
 * leader gone (`LeaderGoesFs`), every such write of the library must still answer as if
 * nothing happened — made once, never twice: deletes made again (no harm done twice); parked
 * writes and refused recordings put back, and the key rotation's new key check, looked up
 * first. In Chromium with real tabs: browser-tabs.test.ts.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, test } from 'node:test';
import { openLocalDb, type LocalDb } from '../../client-lib/src/storage/local-db.ts';
import { addDictation, discardDictations, listDictations, markRejected, requeueDictations } from '../../client-lib/src/storage/dictation-store.ts';
import {
  appendToOutbox,
  dismissFailures,
  dismissRejections,
  listFailures,
  listRejections,
  parkEntry,
  pendingEntries,
  rejectEntry,
  requeueFailures,
} from '../../client-lib/src/storage/outbox.ts';
import { clearUserData } from '../../client-lib/src/sync/device-data.ts';
import { LeaderGoesFs } from './memory-fs-files.ts';

let fs: LeaderGoesFs;
let db: LocalDb;
const at = '2026-12-03T10:00:00.000Z';

beforeEach(async () => {
  fs = new LeaderGoesFs();
  db = await openLocalDb('memory://', { pglite: { fs } });
});
afterEach(() => db.close());

/** Queued writes of mileage for a visit, one each: their mutation ids. */
async function queued(n: number): Promise<number[]> {
  const ids: number[] = [];
  for (let k = 0; k < n; k++) {
    ids.push(await db.transaction((tx) => appendToOutbox(tx, { name: 'visit.mileage', args: { uuid: randomUUID(), mileage: { total_miles: k } }, scheduleUuid: null, clientTime: at })));
  }
  return ids;
}

const count = async (table: string) => ((await db.query<{ n: number }>(`select count(*)::int as n from ${table}`))[0] as { n: number }).n;

test('dismissing refused and parked writes answers, and they are gone', async () => {
  const [refused, parked] = await queued(2);
  await rejectEntry(db, { mutation_id: refused!, status: 422, code: 'validation_failed', message: 'no' }, at);
  await parkEntry(db, { mutation_id: parked!, code: 'mutation_failed', message: 'kept', attempts: 3 }, at);
  fs.arm();
  await dismissRejections(db);
  fs.arm();
  await dismissFailures(db, [parked!]);
  assert.equal(fs.failed, 2, 'both met a leader change after their commit');
  assert.deepEqual(await listRejections(db), []);
  assert.deepEqual(await listFailures(db), []);
});

test('retrying parked writes answers their new ids, and queues each once', async () => {
  const ids = await queued(3);
  for (const id of ids) await parkEntry(db, { mutation_id: id, code: 'mutation_failed', message: 'kept', attempts: 3 }, at);
  assert.equal(await count('outbox'), 0);
  fs.arm();
  const requeued = await requeueFailures(db, [ids[0]!, ids[2]!]);
  assert.equal(fs.failed, 1);
  const pending = await pendingEntries(db, 0, 100);
  assert.deepEqual(
    pending.map((e) => e.mutation_id),
    requeued,
    'the answer names the entries queued, each once',
  );
  assert.equal(requeued.length, 2);
  assert.deepEqual(
    pending.map((e) => (e.args as { mileage: { total_miles: number } }).mileage.total_miles),
    [0, 2],
    'in their order',
  );
  assert.deepEqual((await listFailures(db)).map((f) => f.mutationId), [ids[1]]);
});

test('discarding refused recordings answers, and they are gone with their audio', async () => {
  const id = randomUUID();
  await addDictation(db, { id, schedule_uuid: randomUUID(), discipline: 'PT', encounter_type: 'visit', idempotency_key: randomUUID(), created_at: at }, new Uint8Array(1000));
  await markRejected(db, id, 'unsupported_media', 'no');
  fs.arm();
  await discardDictations(db, null);
  assert.equal(fs.failed, 1);
  assert.deepEqual(await listDictations(db, null), []);
  assert.equal(await count('dictation_chunks'), 0);
});

test('retrying refused recordings answers how many, and they are queued again', async () => {
  const ids = [randomUUID(), randomUUID()];
  for (const id of ids) {
    await addDictation(db, { id, schedule_uuid: randomUUID(), discipline: 'PT', encounter_type: 'visit', idempotency_key: randomUUID(), created_at: at }, new Uint8Array(10));
    await markRejected(db, id, 'unsupported_media', 'no');
  }
  fs.arm();
  assert.equal(await requeueDictations(db, null), 2);
  assert.equal(fs.failed, 1);
  assert.deepEqual((await listDictations(db, null)).map((d) => d.state), ['on_device', 'on_device']);
});

test('wiping the user’s data answers, leaves none, and the new key’s check is stored once', async () => {
  const [refused] = await queued(2);
  await rejectEntry(db, { mutation_id: refused!, status: 422, code: 'validation_failed', message: 'no' }, at);
  // The wipe's own transaction, then the key rotation's second (its first deletes the old check).
  fs.arm();
  await clearUserData(db, null);
  fs.arm(1);
  await db.rotateKey();
  assert.equal(fs.failed, 2);
  for (const table of ['outbox', 'rejections', 'failures', 'feed_rows', 'draft_updates', 'dictations']) assert.equal(await count(table), 0, table);
  assert.equal(await count('device_key_check'), 1, 'one key check, of the new key');
  // The database opens with it: the key check is the new key's.
  await queued(1);
  assert.equal((await pendingEntries(db, 0, 10)).length, 1);
});
