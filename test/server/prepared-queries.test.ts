/**
 * drizzle's queries on PostgreSQL run as statements postgres.js prepares once per connection
 * (patches/README.md, drizzle-orm): unprepared, postgres.js sends every statement with
 * parameters as Parse/Describe, waits for the parameter types, then Bind/Execute — two round
 * trips each, and none of the statements issued together behind it is sent meanwhile, so the
 * sync batch's reads and writes (mutation-sets.ts) ran one after the other instead of
 * pipelined. Prepared, a statement's second run is one Bind/Execute and the next is sent
 * with it. PGlite's session is not postgres.js: nothing to see there.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import { users } from '@fieldchart/schema/db';
import { rowsOf } from '../../server/src/db/database.ts';
import { forEachBackend, type TestDatabase } from '../helpers/backends.ts';

forEachBackend('drizzle queries on PostgreSQL', (backend) => {
  let t: TestDatabase;
  before(async () => {
    t = await backend.open();
  });
  after(() => t.drop());

  test('are prepared once per connection, inside a transaction too, and run again without preparing', { skip: backend.name !== 'postgres' && 'PostgreSQL only' }, async () => {
    const { db } = t.database;
    const prepared = async (tx: typeof db) =>
      rowsOf<{ statement: string }>(await tx.execute(sql`select statement from pg_prepared_statements`))
        .map((r) => r.statement)
        .filter((s) => s.includes('from "users"'));
    await db.transaction(async (tx) => {
      const byId = () => tx.select({ id: users.id }).from(users).where(eq(users.id, randomUUID()));
      assert.deepEqual(await prepared(tx), []);
      await byId();
      const once = await prepared(tx);
      assert.equal(once.length, 1, 'the select is a prepared statement of the session');
      // Issued together, as the sync batch issues its reads: postgres.js pipelines them.
      await Promise.all([byId(), byId(), byId()]);
      assert.deepEqual(await prepared(tx), once, 'run again, not prepared again');
    });
  });
});
