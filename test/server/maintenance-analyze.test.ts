/**
 * The embedded database has no autovacuum: the server refreshes its planner statistics (after
 * boot, after the demo seed, hourly, and for a table that grew by a fifth, checked every ten
 * seconds). PostgreSQL's own autovacuum is left to do it there.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { visits } from '@fieldchart/schema/db';
import { rowsOf } from '../../server/src/db/database.ts';
import { forEachBackend } from '../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';

forEachBackend('maintenance: planner statistics', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('analyzeEmbedded refreshes statistics on PGlite only', async () => {
    await registerUser(server);
    await registerUser(server);
    const ran = await server.runtime.services.maintenance.analyzeEmbedded();
    assert.equal(ran, backend.name === 'pglite');
    if (!ran) return;
    const [users] = rowsOf<{ n: number }>(await server.runtime.database.db.execute(sql`select reltuples::int as n from pg_class where relname = 'users'`));
    assert.ok((users?.n ?? -1) >= 2, `users.reltuples = ${users?.n}`);
  });

  test('analyzeGrown analyzes a table that grew since its statistics, once, on PGlite only', async () => {
    const user = await registerUser(server);
    const { db } = server.runtime.database;
    const { maintenance } = server.runtime.services;
    await db.execute(sql`analyze visits`);
    const stats = async () =>
      rowsOf<{ tuples: number }>(await db.execute(sql`select reltuples::int as tuples from pg_class where relname = 'visits'`))[0]?.tuples ?? -1;
    const before = await stats();
    // 3,000 visits: far more than a fifth over what the statistics knew (and more than eight pages).
    const today = new Date().toISOString().slice(0, 10);
    for (let i = 0; i < 3; i++) {
      await db.insert(visits).values(Array.from({ length: 1000 }, () => ({ id: randomUUID(), ownerId: user.uuid, visitDate: today, startTime: '09:00' })));
    }
    const analyzed = await maintenance.analyzeGrown();
    if (backend.name !== 'pglite') {
      assert.deepEqual(analyzed, []);
      return;
    }
    assert.ok(analyzed.includes('visits'), `analyzed: ${analyzed.join(', ')}`);
    const after = await stats();
    assert.ok(after >= before + 3000, `visits.reltuples ${before} → ${after}`);
    // Nothing grew since: nothing is analyzed again.
    assert.deepEqual(await maintenance.analyzeGrown(), []);
  });
});
