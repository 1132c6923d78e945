/**
 * The device database's file system skips a sync that would store nothing (a read) and runs
 * every other one (client-lib storage/changed-files-sync.ts). Modelled in Node as
 * local-db-commit-persist.test.ts does: a MemoryFS that records, at each sync, what IDBFS would
 * have stored; after any statement that resolved, nothing may be left unsynced.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { syncingOnlyChanges } from '../../client-lib/src/storage/changed-files-sync.ts';
import { openLocalDb, type LocalDb } from '../../client-lib/src/storage/local-db.ts';
import { SyncRecordingFs } from './memory-fs-files.ts';

async function open(): Promise<{ db: LocalDb; fs: SyncRecordingFs }> {
  const fs = new SyncRecordingFs();
  const db = await openLocalDb('memory://', { pglite: { fs: syncingOnlyChanges(fs) } });
  await db.query('create table t (n int, body text)');
  return { db, fs };
}

test('reads skip the sync; a write syncs, and leaves nothing unsynced', async () => {
  const { db, fs } = await open();
  try {
    await db.query('insert into t (n) select g from generate_series(1, 50) g');
    // A checkpoint writes the pages the insert left in memory: from then on reads change no file.
    await db.query('checkpoint');
    assert.deepEqual(fs.unsynced(), []);
    const before = fs.syncs;
    for (let i = 0; i < 5; i++) await db.query('select count(*) from t where n > $1', [i]);
    assert.equal(fs.syncs, before, 'five reads that changed no file: no sync reached IndexedDB');
    await db.query('insert into t (n) values (51)');
    assert.equal(fs.syncs, before + 1, 'a write syncs');
    assert.deepEqual(fs.unsynced(), []);
  } finally {
    await db.close();
  }
});

/** A statement of the device database, as the client's stores make them. */
const statement = fc.oneof(
  fc.record({ kind: fc.constant('insert' as const), n: fc.integer({ min: 1, max: 300 }) }),
  fc.record({ kind: fc.constant('insert in a transaction' as const), n: fc.integer({ min: 1, max: 300 }) }),
  fc.record({ kind: fc.constant('update' as const), n: fc.integer({ min: 0, max: 300 }) }),
  fc.record({ kind: fc.constant('delete' as const), n: fc.integer({ min: 0, max: 300 }) }),
  fc.record({ kind: fc.constant('read' as const), n: fc.integer({ min: 0, max: 300 }) }),
  fc.record({ kind: fc.constant('checkpoint' as const) }),
  fc.record({ kind: fc.constant('vacuum' as const) }),
);

async function run(db: LocalDb, s: { readonly kind: string; readonly n?: number }): Promise<void> {
  const n = s.n ?? 0;
  switch (s.kind) {
    case 'insert':
      await db.query(`insert into t (n, body) select g, repeat('x', 200) from generate_series(1, $1) g`, [n]);
      return;
    case 'insert in a transaction':
      await db.transaction(async (tx) => {
        await tx.query(`insert into t (n, body) select g, repeat('y', 200) from generate_series(1, $1) g`, [n]);
      });
      return;
    case 'update':
      await db.query(`update t set body = body || 'z' where n <= $1`, [n]);
      return;
    case 'delete':
      await db.query('delete from t where n = $1', [n]);
      return;
    case 'read':
      await db.query('select n, length(body) from t where n >= $1 order by n', [n]);
      return;
    case 'checkpoint':
      await db.query('checkpoint');
      return;
    default:
      await db.query('vacuum t');
  }
}

test('after any statement resolves, every changed file is stored (property)', async () => {
  // One database for every run (an open costs seconds): each run goes on from the last's state.
  const { db, fs } = await open();
  try {
    await fc.assert(
      fc.asyncProperty(fc.array(statement, { minLength: 1, maxLength: 25 }), async (statements) => {
        for (const s of statements) {
          await run(db, s);
          assert.deepEqual(fs.unsynced(), [], `after ${s.kind}`);
        }
      }),
      { numRuns: 40 },
    );
  } finally {
    await db.close();
  }
});
