/**
 * What a poke's diff reads, counted by the database itself (EXPLAIN ANALYZE of the statement the
 * feed runs): rows read and rows thrown away, over every node and loop, for a clinician whose
 * window holds 1,200 visits when 3,600 timer events arrive at once, as a device's outbox drains,
 * and then one more. The feed tells the test each diff it runs (FeedDeps.onDiff), and the test
 * explains that statement on one generic plan, as the server runs it (PGlite: `SET LOCAL
 * plan_cache_mode` with each run; PostgreSQL: its planned pool). The plan is made on statistics
 * that know the visits and not the events, as after a device's outbox drained, and again after
 * ANALYZE, which the embedded server runs when a table has grown (maintenance.analyzeGrown) and
 * PostgreSQL's autovacuum after enough changes.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { visits } from '@fieldchart/schema/db';
import { addDays } from '@fieldchart/schema/rules';
import { executeText } from '../../../server/src/db/one-statement.ts';
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
    // The diff the feed runs, as the server's feed runs it, each statement told to this test.
    let ran: { readonly sql: string; readonly params: readonly unknown[] } | null = null;
    const feed = createFeed({
      db: database.db,
      phi: services.phi,
      oneSession: database.pglite !== null,
      planned: database.planned,
      onDiff: (statement) => (ran = statement),
    });
    // Explained on one session, where the statement keeps one generic plan as the feed's does:
    // PGlite is one; on PostgreSQL a reserved connection. PREPAREd once, at the first explain.
    const reserved = database.sql ? await database.sql.reserve() : null;
    const pglite = database.pglite as unknown as { exec(text: string): Promise<Array<{ rows: Array<Record<string, unknown>> }>> } | null;
    const run = async (text: string): Promise<Array<Record<string, unknown>>> => {
      if (reserved) return [...(await reserved.unsafe<Array<Record<string, unknown>>>(text))];
      assert.ok(pglite);
      return (await pglite.exec(`set local plan_cache_mode = force_generic_plan; ${text}`)).at(-1)?.rows ?? [];
    };
    let preparedText: string | null = null;
    const explain = async (): Promise<number> => {
      const diff: { readonly sql: string; readonly params: readonly unknown[] } | null = ran;
      assert.ok(diff, 'the feed ran its diff');
      if (preparedText === null) {
        await run(`prepare fieldchart_test_diff as ${diff.sql}`);
        preparedText = diff.sql;
      }
      assert.equal(diff.sql, preparedText, 'one statement for every poke');
      const [row] = await run(`explain (analyze, format json) ${executeText('fieldchart_test_diff', diff.params)}`);
      const value = Object.values(row ?? {})[0];
      const plans = (typeof value === 'string' ? JSON.parse(value) : value) as Array<{ Plan: PlanNode }>;
      return rowsTouched((plans[0] as { Plan: PlanNode }).Plan);
    };
    try {
      if (reserved) await reserved.unsafe('set plan_cache_mode = force_generic_plan');
      const user = await registerUser(server);
      const now = new Date();
      const first = await feed.read(user.uuid, null, now);
      const empty = await feed.read(user.uuid, first.cursor, now);
      assert.equal(empty.changes.length, 0);

      const today = now.toISOString().slice(0, 10);
      const ids = Array.from({ length: VISITS }, () => randomUUID());
      await database.db.insert(visits).values(ids.map((id, i) => ({ id, ownerId: user.uuid, visitDate: addDays(today, (i % 30) - 20), startTime: '09:00' })));
      const filled = await feed.read(user.uuid, empty.cursor, now);
      assert.equal(filled.changes.length, VISITS);
      await database.db.execute(sql`analyze`);

      // Every visit's events at once: 3,600 rows changed since the cursor. The plan is made now,
      // on statistics that know the visits and not the events, as after a device's outbox drained.
      await database.db.execute(sql`insert into timer_events (visit_id, owner_id, event_type, event_time)
        select v.id, v.owner_id, t, now() - (n || ' minutes')::interval
        from visits v cross join lateral unnest(array['start_travel', 'arrive', 'start_documentation']) with ordinality as e(t, n)
        where v.owner_id = ${user.uuid}::uuid`);
      const events = await feed.read(user.uuid, filled.cursor, now);
      assert.equal(events.changes.filter((c) => c.table === 'timer_events').length, VISITS * EVENTS_EACH);
      const forAll = await explain();
      // Each changed row is read once, its visit once by key, and passed up a few nodes.
      assert.ok(forAll <= 8 * VISITS * EVENTS_EACH, `${forAll} rows touched for ${VISITS * EVENTS_EACH} changed`);

      // One more event, the statistics now knowing the events (ANALYZE drops the plan): the
      // window is not read again.
      await database.db.execute(sql`analyze`);
      let cursor = events.cursor;
      for (let attempt = 1; ; attempt++) {
        await database.db.execute(sql`insert into timer_events (visit_id, owner_id, event_type, event_time) values (${ids[0]}::uuid, ${user.uuid}::uuid, 'complete', now() + ${`${attempt} seconds`}::interval)`);
        const one = await feed.read(user.uuid, cursor, now);
        assert.equal(one.changes.length, 1);
        const forOne = await explain();
        // The diff reads rows by transaction id from the cursor's snapshot's xmin. On PostgreSQL
        // xids are the cluster's: a transaction of another database that was open when the
        // cursor was taken (another test file's) holds that xmin back, and the rows written since
        // it are read and filtered, rightly (seen under load: 8,414). Only a cursor taken with no
        // other transaction open measures the plan alone; the test takes a new one until then.
        const since = String((ran as { readonly params: readonly unknown[] } | null)?.params.find((v) => typeof v === 'string' && /^\d+:\d+:/.test(v)) ?? '');
        const [xmin, xmax] = since.split(':');
        if (forOne <= 60 || xmin === xmax || attempt === 20) {
          assert.ok(forOne <= 60, `${forOne} rows touched for 1 changed (cursor ${since || 'not found'}, attempt ${attempt})`);
          break;
        }
        cursor = one.cursor;
        await new Promise((r) => setTimeout(r, 250));
      }
    } finally {
      if (preparedText !== null) await run('deallocate fieldchart_test_diff').catch(() => {});
      if (reserved) await reserved.unsafe('reset plan_cache_mode').catch(() => {});
      reserved?.release();
    }
  });
});
