/**
 * The feed's cursor is a snapshot, not a row version, because PostgreSQL transactions commit
 * in another order than they take versions. This property drives real concurrent transactions
 * on PostgreSQL — each on its own connection, begun, written, committed or rolled back in a
 * random interleaving with feed reads — and requires that a device applying every feed result
 * ends up with exactly the committed rows: nothing missed, nothing from a rolled-back write.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import fc from 'fast-check';
import postgres from 'postgres';
import type { Change } from '@fieldchart/schema/sync';
import { feedOf } from '../../../server/src/sync/service-hooks.ts';
import { backends } from '../../helpers/backends.ts';
import { registerUser, startTestServer } from '../../helpers/test-server.ts';

const backend = backends.find((b) => b.name === 'postgres');

type Op =
  | { kind: 'begin' }
  | { kind: 'insert'; tx: number }
  | { kind: 'update'; tx: number; pick: number }
  | { kind: 'commit'; tx: number }
  | { kind: 'rollback'; tx: number }
  | { kind: 'feed' };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 2, arbitrary: fc.constant<Op>({ kind: 'begin' }) },
  { weight: 4, arbitrary: fc.nat(5).map<Op>((tx) => ({ kind: 'insert', tx })) },
  { weight: 3, arbitrary: fc.tuple(fc.nat(5), fc.nat(50)).map<Op>(([tx, pick]) => ({ kind: 'update', tx, pick })) },
  { weight: 2, arbitrary: fc.nat(5).map<Op>((tx) => ({ kind: 'commit', tx })) },
  { weight: 1, arbitrary: fc.nat(5).map<Op>((tx) => ({ kind: 'rollback', tx })) },
  { weight: 3, arbitrary: fc.constant<Op>({ kind: 'feed' }) },
);

test('feed: a device applying every read holds exactly the committed rows, whatever the commit order [postgres]', { skip: !backend && 'TEST_DATABASE_URL not set' }, async (t) => {
  const server = await startTestServer(backend!);
  const sql = postgres(server.db.url as string, { max: 8, onnotice: () => {} });
  t.after(async () => {
    await sql.end();
    await server.close();
  });
  const feed = feedOf(server.runtime.services);
  const today = new Date().toISOString().slice(0, 10);

  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 5, maxLength: 40 }), async (ops) => {
      const user = await registerUser(server);
      const committed = new Map<string, string>();
      const device = new Map<string, string>();
      let cursor: string | null = null;
      interface Open {
        readonly conn: postgres.ReservedSql;
        readonly writes: Map<string, string>;
      }
      const open: Open[] = [];
      /** Rows an open transaction holds a lock on: another open one must not wait for it. */
      const locked = new Set<string>();
      let minute = 0;
      const nextTime = () => `${String(Math.floor(minute / 60) % 24).padStart(2, '0')}:${String(minute++ % 60).padStart(2, '0')}`;

      const read = async () => {
        const result = await feed.read(user.uuid, cursor, new Date());
        if (result.reset) device.clear();
        for (const c of result.changes as Change[]) {
          if (c.table !== 'visits') continue;
          if (c.op === 'delete') device.delete(c.id);
          else device.set(c.id, String(c.row.start_time));
        }
        cursor = result.cursor;
      };
      const finish = async (o: Open, commit: boolean) => {
        await o.conn.unsafe(commit ? 'commit' : 'rollback');
        o.conn.release();
        for (const id of o.writes.keys()) locked.delete(id);
        if (commit) for (const [id, time] of o.writes) committed.set(id, time);
        open.splice(open.indexOf(o), 1);
      };

      for (const step of ops) {
        if (step.kind === 'feed') await read();
        else if (step.kind === 'begin') {
          if (open.length >= 5) continue;
          const conn = await sql.reserve();
          await conn.unsafe('begin');
          // Take a transaction id now, so commit order can differ from begin order.
          await conn.unsafe('select pg_current_xact_id()');
          open.push({ conn, writes: new Map() });
        } else {
          const o = open[step.tx % Math.max(1, open.length)];
          if (!o) continue;
          if (step.kind === 'commit' || step.kind === 'rollback') await finish(o, step.kind === 'commit');
          else if (step.kind === 'insert') {
            const id = randomUUID();
            const time = nextTime();
            await o.conn`insert into visits (id, owner_id, visit_date, start_time) values (${id}, ${user.uuid}, ${today}, ${time})`;
            o.writes.set(id, time);
            locked.add(id);
          } else {
            const candidates = [...committed.keys(), ...o.writes.keys()].filter((id) => o.writes.has(id) || !locked.has(id));
            const id = candidates[step.pick % Math.max(1, candidates.length)];
            if (!id) continue;
            const time = nextTime();
            await o.conn`update visits set start_time = ${time} where id = ${id}`;
            o.writes.set(id, time);
            locked.add(id);
          }
        }
      }
      for (const o of [...open]) await finish(o, true);
      await read();
      assert.deepEqual(new Map([...device].sort()), new Map([...committed].sort()));
    }),
    { numRuns: 40, verbose: 1 },
  );
});
