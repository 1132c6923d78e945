/**
 * A transaction of the device database is persisted when it resolves. PGlite runs COMMIT while
 * it still counts as inside the transaction and so does not sync then; in a browser the commit
 * reached IndexedDB only with the next statement outside a transaction, and a reload before
 * that lost it. Modelled in Node with a file system that, like IDBFS, remembers the files'
 * modification times at each sync: after the transaction, nothing may be left unsynced.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openLocalDb } from '../../client-lib/src/storage/local-db.ts';
import { SyncRecordingFs } from './memory-fs-files.ts';

test('a resolved transaction leaves nothing unsynced', async () => {
  const fs = new SyncRecordingFs();
  const db = await openLocalDb('memory://', { pglite: { fs } });
  try {
    await db.query('create table t (n int)');
    for (let n = 1; n <= 3; n++) {
      await db.transaction(async (tx) => {
        await tx.query('insert into t (n) values ($1)', [n]);
      });
      assert.deepEqual(fs.unsynced(), [], `transaction ${n}: its commit is persisted`);
    }
  } finally {
    await db.close();
  }
});
