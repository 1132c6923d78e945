/**
 * The device's storage failing under the client: a full quota and a database that never
 * opens surface as a typed `StorageError` or as sync state (`lastError.code`), never as an
 * unhandled rejection, and the client carries on once space is freed.
 *
 * The stand-in is at the seam where PGlite meets the browser's storage: PGlite's in-memory
 * file system (the real database, real SQL) with the persistence step of its IndexedDB file
 * system replaced. IDBFS writes the changed files to IndexedDB after every statement outside a
 * transaction and fails with a DOMException `QuotaExceededError` when the quota is reached; its open never
 * settles when another tab blocks it (IDBFS does not listen for `blocked`).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { MemoryFS } from '@electric-sql/pglite';
import { LeaderChangedError } from '@electric-sql/pglite/worker';
import { createFieldchartClient, StorageError } from '../../client-lib/src/index.ts';
import { forEachBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { createPatient, scheduleVisit } from '../server/visits/visit-fixtures.ts';
import { ev } from './support.ts';
import { dataFileTimes } from './memory-fs-files.ts';
import { storageErrorOf } from '../../client-lib/src/storage/storage-errors.ts';

/**
 * IDBFS as the quota sees it: like IDBFS's reconcile, a sync writes the files of the database
 * whose modification time changed since the last stored sync, so a statement that changed
 * nothing still succeeds; while `full`, a sync with changes fails as IndexedDB's does, and the
 * changes stay pending for the next sync.
 */
class QuotaFs extends MemoryFS {
  full = false;
  private stored = new Map<string, number>();
  private files(): Map<string, number> {
    return dataFileTimes(this.pg);
  }
  override async syncToFs(relaxedDurability?: boolean): Promise<void> {
    const now = this.files();
    const changed = now.size !== this.stored.size || [...now].some(([p, t]) => this.stored.get(p) !== t);
    if (changed && this.full) throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
    this.stored = now;
    return super.syncToFs(relaxedDurability);
  }
}

/** IDBFS opening while another tab holds an older version of the database open: it waits forever. */
class BlockedFs extends MemoryFS {
  override initialSyncFs(): Promise<void> {
    return new Promise(() => {});
  }
}

/** IDBFS where IndexedDB refuses to open (a private window, storage disabled). */
class RefusedFs extends MemoryFS {
  override async initialSyncFs(): Promise<void> {
    throw new DOMException('A mutation operation was attempted on a database that did not allow mutations.', 'InvalidStateError');
  }
}

const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
process.on('unhandledRejection', onUnhandled);
after(() => {
  process.off('unhandledRejection', onUnhandled);
});

const today = () => new Date().toISOString().slice(0, 10);

test('a call cut by the closing of the tab that held the shared database is storage_unavailable, not a raw error', () => {
  const err = storageErrorOf(new LeaderChangedError());
  assert.ok(err instanceof StorageError);
  assert.equal(err.code, 'storage_unavailable');
  assert.match(err.message, /may or may not have been made/);
  assert.equal(storageErrorOf(new Error('syntax error at or near "selec"')), null, 'a query error stays what it is');
});

test('a database that never opens rejects as storage_blocked; one that refuses, as storage_unavailable', async () => {
  const started = Date.now();
  const blocked = createFieldchartClient({ baseUrl: 'http://127.0.0.1:9', dataDir: 'memory://', pglite: { fs: new BlockedFs() }, storageOpenTimeoutMs: 500 });
  await assert.rejects(blocked, (err: unknown) => err instanceof StorageError && err.code === 'storage_blocked');
  assert.ok(Date.now() - started < 20_000);

  const refused = createFieldchartClient({ baseUrl: 'http://127.0.0.1:9', dataDir: 'memory://', pglite: { fs: new RefusedFs() } });
  await assert.rejects(refused, (err: unknown) => {
    assert.ok(err instanceof StorageError);
    assert.equal(err.code, 'storage_unavailable');
    assert.equal((err.cause as DOMException).name, 'InvalidStateError');
    return true;
  });
  assert.deepEqual(unhandled, []);
});

forEachBackend('offline client: a full device storage', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('a full storage is state and typed errors, the write that filled it is uploaded once, and syncing resumes when space is freed', async () => {
    const user = await registerUser(server);
    const patient = await createPatient(server, user);
    const visitId = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today(), start_time: '09:00' });
    const fs = new QuotaFs();
    const client = await createFieldchartClient({ baseUrl: server.url, dataDir: 'memory://', pglite: { fs }, backoff: { initialMs: 40, maxMs: 400 } });
    try {
      await client.signIn({ email: user.email, password: user.password });
      await client.sync.whenSynced({ timeoutMs: 30_000 });
      assert.equal((await client.visits.today()).length, 1);

      assert.notEqual(client.sync.status.lastError?.code, 'storage_full');

      // A change arriving from the server cannot be stored: state, not a crash.
      fs.full = true;
      const second = await createPatient(server, user);
      await eventually(() => assert.equal(client.sync.status.lastError?.code, 'storage_full'), { timeoutMs: 30_000 });
      fs.full = false;
      await eventually(async () => assert.ok((await client.patients.list()).some((p) => p.uuid === second.uuid), 'not yet: (await client.patients.list()).some((p) => p.uuid === second.uuid)'), { timeoutMs: 30_000 });
      // Quiet again (reconnected, current), so the next write is the first statement to meet the full storage.
      await client.sync.whenSynced({ timeoutMs: 30_000 });

      // A write: made in memory, then persisted as its transaction ends, which meets the full
      // quota. The write resolves and is queued; the failure is state.
      fs.full = true;
      await client.visits.recordTimerEvents(visitId, [ev('start_travel', `${today()}T08:30:00.000Z`)]);
      assert.equal(client.sync.status.lastError?.code, 'storage_full');
      // Until space is freed PGlite retries the persistence before every statement: calls
      // reject, typed.
      await assert.rejects(client.visits.today(), (err: unknown) => err instanceof StorageError && err.code === 'storage_full');
      fs.full = false;
      await client.sync.whenSynced({ timeoutMs: 30_000 });
      const details = await server.api('GET', `/visit-details/${visitId}`, { token: user.token });
      assert.equal(details.body.data.timer_events.length, 1, 'the write reached the server once');
      assert.equal((await client.visits.receipt(visitId)).state, 'acknowledged');
    } finally {
      await client.close();
    }
    assert.deepEqual(unhandled, []);
  });
});
