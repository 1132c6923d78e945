/**
 * What a poke's diff reads, counted by the database itself (EXPLAIN ANALYZE of the statement the
 * feed runs): rows read and rows thrown away, over every node and loop, for a clinician whose
 * window holds 1,200 visits when 3,600 timer events arrive at once, as a device's outbox drains,
 * and then one more. The diff runs on one generic plan, as on the server (PGlite: `SET LOCAL
 * plan_cache_mode` with each run; PostgreSQL: its planned pool); the plan is dropped by ANALYZE,
 * which the embedded server runs when a table has grown (maintenance.analyzeGrown) and
 * PostgreSQL's autovacuum after enough changes. Here it runs once the visits are in and again
 * once the events are: the first diff's plan knows the visits, not the events.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { drizzle } from 'drizzle-orm/postgres-js';
import * as schema from '@fieldchart/schema/db';
import { visits } from '@fieldchart/schema/db';
import { addDays } from '@fieldchart/schema/rules';
import { rowsOf, type Db } from '../../../server/src/db/database.ts';
import { createFeed } from '../../../server/src/services/sync/feed.ts';
import { forEachBackend } from '../../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';

interface PlanNode {
  readonly 'Actual Rows': number;
  readonly 'Actual Loops': number;
  readonly 'Rows Removed by Filter'?: number;
  readonly 'Rows Removed by Index Recheck'?: number;
  readonly Plans?: readonly PlanNode[];
}

/** Rows every node produced or filtered away, times its loops. */
function rowsTouched(node: PlanNode): number {
  const own = (node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0)) * node['Actual Loops'];
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsTouched(child), 0);
}

const VISITS = 1200;
const EVENTS_EACH = 3;

forEachBackend('feed diff: what a poke reads', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('a diff reads the rows that changed and their visits by key, not the window', async () => {
    const { database, services } = server.runtime;
    // One session, as the diff's plan lives in one: PGlite is one; on PostgreSQL a reserved connection.
    const reserved = database.sql ? await database.sql.reserve() : null;
    // A reserved connection lacks the pool's options, whose type parsers drizzle reads.
    const db: Db = reserved && database.sql ? (drizzle({ client: Object.assign(reserved, { options: database.sql.options }), schema }) as unknown as Db) : database.db;
    const dialect = new PgDialect();
    let diffText: string | null = null;
    const captured = (text: string) => {
      const at = text.indexOf('execute fieldchart_feed_diff');
      if (at >= 0) diffText = text.slice(at);
    };
    // The statement the feed runs, captured to be explained with the same values: PostgreSQL's
    // through drizzle, PGlite's through its own client (a string of two statements).
    const pglite = database.pglite as unknown as { exec(text: string): Promise<Array<{ rows: Array<Record<string, unknown>> }>> } | null;
    const exec = pglite?.exec;
    if (pglite && exec) {
      pglite.exec = (text: string) => {
        captured(text);
        return exec.call(pglite, text);
      };
    }
    const recording = new Proxy(db, {
      get(target, key, receiver) {
        if (key !== 'execute') return Reflect.get(target, key, receiver) as unknown;
        return (query: SQL) => {
          captured(dialect.sqlToQuery(query).sql);
          return target.execute(query);
        };
      },
    });
    const explain = async (): Promise<number> => {
      assert.ok(diffText, 'the feed ran its diff');
      const text = `explain (analyze, format json) ${diffText}`;
      const [row] = pglite && exec ? ((await exec.call(pglite, `set local plan_cache_mode = force_generic_plan; ${text}`)).at(-1)?.rows ?? []) : rowsOf<Record<string, unknown>>(await db.execute(sql.raw(text)));
      const value = Object.values(row ?? {})[0];
      const plans = (typeof value === 'string' ? JSON.parse(value) : value) as Array<{ Plan: PlanNode }>;
      return rowsTouched((plans[0] as { Plan: PlanNode }).Plan);
    };
    try {
      const user = await registerUser(server);
      if (reserved) await db.execute(sql`set plan_cache_mode = force_generic_plan`);
      const feed = createFeed({ db: recording, phi: services.phi, oneSession: true });
      const now = new Date();
      // A full read is a transaction, which a reserved connection does not open: the pool's feed reads it.
      const first = await createFeed({ db: database.db, phi: services.phi }).read(user.uuid, null, now);
      const empty = await feed.read(user.uuid, first.cursor, now);
      assert.equal(empty.changes.length, 0);

      const today = now.toISOString().slice(0, 10);
      const ids = Array.from({ length: VISITS }, () => randomUUID());
      await database.db.insert(visits).values(ids.map((id, i) => ({ id, ownerId: user.uuid, visitDate: addDays(today, (i % 30) - 20), startTime: '09:00' })));
      const filled = await feed.read(user.uuid, empty.cursor, now);
      assert.equal(filled.changes.length, VISITS);
      await db.execute(sql`analyze`);

      // Every visit's events at once: 3,600 rows changed since the cursor.
      await database.db.execute(sql`insert into timer_events (visit_id, owner_id, event_type, event_time)
        select v.id, v.owner_id, t, now() - (n || ' minutes')::interval
        from visits v cross join lateral unnest(array['start_travel', 'arrive', 'start_documentation']) with ordinality as e(t, n)
        where v.owner_id = ${user.uuid}::uuid`);
      const events = await feed.read(user.uuid, filled.cursor, now);
      assert.equal(events.changes.filter((c) => c.table === 'timer_events').length, VISITS * EVENTS_EACH);
      const forAll = await explain();
      // Each changed row is read once, its visit once by key, and passed up a few nodes.
      assert.ok(forAll <= 8 * VISITS * EVENTS_EACH, `${forAll} rows touched for ${VISITS * EVENTS_EACH} changed`);

      // One more event, the statistics now knowing the events: the window is not read again.
      await db.execute(sql`analyze`);
      await database.db.execute(sql`insert into timer_events (visit_id, owner_id, event_type, event_time) values (${ids[0]}::uuid, ${user.uuid}::uuid, 'complete', now())`);
      const one = await feed.read(user.uuid, events.cursor, now);
      assert.equal(one.changes.length, 1);
      const forOne = await explain();
      assert.ok(forOne <= 60, `${forOne} rows touched for 1 changed`);
    } finally {
      if (pglite && exec) pglite.exec = exec;
      if (database.pglite) await db.execute(sql`deallocate fieldchart_feed_diff`).catch(() => {});
      if (reserved) {
        await db.execute(sql`deallocate fieldchart_feed_diff`).catch(() => {});
        await db.execute(sql`reset plan_cache_mode`).catch(() => {});
      }
      reserved?.release();
    }
  });
});
