/**
 * A write the server cannot apply for a reason that is not the write's (here a database
 * trigger that raises, standing in for a bug): the real server answers `retry` a bounded
 * number of times, then `failed`; the offline client keeps the write (with its arguments) in
 * its failures, counts it in the status, keeps it across an app restart, and the writes queued
 * behind it go through. A parked write the app dismisses is dropped; once the cause is gone,
 * `failures.retry()` sends the other again under a new id and it is applied.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import { patients } from '@fieldchart/schema/db';
import { forEachBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { openClient, tempDataDir } from './support.ts';

forEachBackend('offline client: a write parked as failed', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
    const db = server.runtime.database.db;
    // SQLSTATE P0001: neither the write's data (class 22) nor a transient failure.
    await db.execute(sql`create or replace function fuzz_boom() returns trigger language plpgsql as $$
      begin if new.discipline = 'BOOM' then raise exception 'boom'; end if; return new; end $$`);
    await db.execute(sql`create trigger fuzz_boom before insert on patient_referrals for each row execute function fuzz_boom()`);
  });
  after(() => server.close());

  test('kept and surfaced on the device, the queue behind it moves on, and a retry later applies it', async () => {
    const user = await registerUser(server);
    const dir = tempDataDir();
    let client = await openClient(server.url, dir);
    try {
      await client.signIn({ email: user.email, password: user.password });
      await client.sync.whenSynced({ timeoutMs: 30_000 });
      const failures: number[] = [];
      client.failures.on((f) => failures.push(f.mutationId));
      const a = await client.patients.create({ first_name: 'Before', last_name: 'Boom' });
      const b = await client.patients.create({ first_name: 'The', last_name: 'Boom', referral: { discipline: 'BOOM' } });
      const c = await client.patients.create({ first_name: 'After', last_name: 'Boom' });

      await eventually(async () => assert.equal((await client.failures.list()).length, 1), { timeoutMs: 90_000 });
      const [parked] = await client.failures.list();
      assert.equal(parked?.code, 'mutation_failed');
      assert.equal(parked?.name, 'patient.create');
      assert.equal((parked?.args as { uuid?: string }).uuid, b.uuid, 'the write is kept with its arguments');
      assert.equal(parked?.attempts, 3);
      assert.deepEqual(failures, [parked?.mutationId]);
      await eventually(() => {
        assert.equal(client.sync.status.failed, 1);
        assert.equal(client.sync.status.pending, 0, 'nothing waits behind the parked write');
      }, { timeoutMs: 30_000 });
      const stored = async (id: string) => (await server.runtime.database.db.select({ id: patients.id }).from(patients).where(eq(patients.id, id))).length;
      assert.equal(await stored(a.uuid), 1);
      assert.equal(await stored(c.uuid), 1, 'the write queued behind it was applied');
      assert.equal(await stored(b.uuid), 0);

      // Kept across a restart of the app: the parked write is in the device database.
      await client.close();
      client = await openClient(server.url, dir);
      assert.deepEqual((await client.failures.list()).map((f) => f.mutationId), [parked?.mutationId]);
      assert.equal(client.sync.status.failed, 1);
      // A second one, which the app dismisses: dropped from the device, never applied.
      const d = await client.patients.create({ first_name: 'Dismissed', last_name: 'Boom', referral: { discipline: 'BOOM' } });
      await eventually(async () => assert.equal((await client.failures.list()).length, 2), { timeoutMs: 90_000 });
      const dismissed = (await client.failures.list()).find((f) => (f.args as { uuid?: string }).uuid === d.uuid);
      assert.ok(dismissed);
      await client.failures.dismiss([dismissed.mutationId]);
      assert.deepEqual((await client.failures.list()).map((f) => f.mutationId), [parked?.mutationId]);
      assert.equal(client.sync.status.failed, 1);
      assert.equal(await stored(d.uuid), 0);

      // The cause is fixed; the app retries the parked write: a new id, applied once.
      await server.runtime.database.db.execute(sql`drop trigger fuzz_boom on patient_referrals`);
      const [newId] = await client.failures.retry();
      assert.ok(newId !== undefined && parked && newId > parked.mutationId);
      await client.sync.whenSynced({ timeoutMs: 60_000 });
      assert.equal(await stored(b.uuid), 1);
      assert.deepEqual(await client.failures.list(), []);
      assert.equal(client.sync.status.failed, 0);
    } finally {
      await client.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
