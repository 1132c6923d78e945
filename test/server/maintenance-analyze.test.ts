/**
 * The embedded database has no autovacuum: the server refreshes its planner statistics (after
 * boot, after the demo seed, hourly). PostgreSQL's own autovacuum is left to do it there.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
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
});
