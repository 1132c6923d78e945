/**
 * The options every device database opens with (client-lib storage/pglite-options.ts): the
 * IndexedDB file system where it applies, the device's start-up and initdb parameters, seen from
 * inside the databases the client opens.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import { IdbFs, MemoryFS, PGlite } from '@electric-sql/pglite';
import { openLocalDb } from '../../client-lib/src/storage/local-db.ts';
import { pgliteOptionsFor } from '../../client-lib/src/storage/pglite-options.ts';
import { openDeviceDb, tempDataDir } from './support.ts';

test('an idb:// database gets the gated IndexedDB file system; an app’s own fs and other data dirs are left as they are', async () => {
  const idb = (await pgliteOptionsFor('idb://fieldchart-app')).fs;
  assert.ok(idb instanceof IdbFs);
  // The gate replaces the instance's sync (the class's own stays PGlite's).
  assert.ok(Object.hasOwn(idb, 'syncToFs') && Object.hasOwn(idb, 'initialSyncFs'));
  const own = new MemoryFS();
  assert.equal((await pgliteOptionsFor('idb://fieldchart-app', { fs: own })).fs, own);
  assert.equal(Object.hasOwn(own, 'syncToFs'), false);
  assert.equal((await pgliteOptionsFor('memory://')).fs, undefined);
  assert.equal((await pgliteOptionsFor('/var/lib/app')).fs, undefined);
});

test('the empty image goes only where the data dir surely holds no database: not over an app’s own file system', async () => {
  const loadDataDir = new Blob([]);
  assert.equal((await pgliteOptionsFor('idb://fieldchart-app', { loadDataDir }, true)).loadDataDir, loadDataDir);
  assert.equal((await pgliteOptionsFor('idb://fieldchart-app', { loadDataDir }, false)).loadDataDir, undefined);
  assert.equal((await pgliteOptionsFor('idb://fieldchart-app', { loadDataDir, fs: new MemoryFS() }, true)).loadDataDir, undefined);
  assert.equal((await pgliteOptionsFor('memory://', { loadDataDir }, true)).loadDataDir, loadDataDir);
});

test('an image given as a loader is loaded only for a data dir that holds no database; a loader that fails or stalls leaves initdb to run', async () => {
  const image = new Blob([]);
  let loads = 0;
  const loader = async () => {
    loads++;
    return image;
  };
  assert.equal((await pgliteOptionsFor('idb://fieldchart-app', { loadDataDir: loader }, false)).loadDataDir, undefined);
  assert.equal(loads, 0, 'not loaded for a database that may exist');
  assert.equal((await pgliteOptionsFor('idb://fieldchart-app', { loadDataDir: loader }, true)).loadDataDir, image);
  assert.equal(loads, 1);
  const offline = async (): Promise<Blob> => {
    throw new TypeError('Failed to fetch');
  };
  assert.equal((await pgliteOptionsFor('memory://', { loadDataDir: offline }, true)).loadDataDir, undefined);
  // A download that does not end (a slow network): given up after the wait, its fetch aborted.
  let aborted: AbortSignal | null = null;
  const stalled = (signal: AbortSignal) =>
    new Promise<Blob>(() => {
      aborted = signal;
    });
  const started = performance.now();
  assert.equal((await pgliteOptionsFor('memory://', { loadDataDir: stalled }, true, 100)).loadDataDir, undefined);
  assert.ok(performance.now() - started < 5_000, 'the open goes on to initdb after the wait');
  assert.equal((aborted as AbortSignal | null)?.aborted, true, 'the loader is told to stop');
});

test('every device database starts with PGlite’s own parameters and 16 MB of shared buffers', async () => {
  for (const dir of ['memory://', 'idb://fieldchart-app', '/var/lib/app']) {
    const { startParams } = await pgliteOptionsFor(dir);
    assert.deepEqual(startParams.slice(0, PGlite.defaultStartParams.length), PGlite.defaultStartParams, dir);
    assert.deepEqual(startParams.slice(PGlite.defaultStartParams.length), ['-c', 'shared_buffers=16MB'], dir);
  }
});

test('a device database opened by the client, in memory or in a directory and reopened, runs with them and keeps its rows', async () => {
  const setting = async (db: Awaited<ReturnType<typeof openDeviceDb>>) =>
    (await db.query<{ shared_buffers: string }>("select current_setting('shared_buffers') as shared_buffers"))[0]?.shared_buffers;
  const memory = await openDeviceDb('memory://');
  try {
    assert.equal(await setting(memory), '16MB');
  } finally {
    await memory.close();
  }
  const dir = tempDataDir();
  try {
    const first = await openDeviceDb(dir);
    assert.equal(await setting(first), '16MB');
    await first.query('create table kept (n int)');
    await first.query('insert into kept select generate_series(1, 5000)');
    await first.close();
    const again = await openDeviceDb(dir);
    try {
      assert.equal(await setting(again), '16MB');
      assert.deepEqual(await again.query('select count(*)::int as n from kept'), [{ n: 5000 }]);
    } finally {
      await again.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a device database has 1 MB log segments, whether initdb made it or it started from the empty image', async () => {
  const segment = async (db: { query<T>(sql: string): Promise<T[]> }) =>
    (await db.query<{ size: string }>("select current_setting('wal_segment_size') as size"))[0]?.size;
  const dir = tempDataDir();
  try {
    // A new directory without the image: the client's own initdb.
    const made = await openLocalDb(dir);
    try {
      assert.equal(await segment(made), '1MB');
    } finally {
      await made.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const fromImage = await openDeviceDb('memory://');
  try {
    assert.equal(await segment(fromImage), '1MB');
  } finally {
    await fromImage.close();
  }
});
