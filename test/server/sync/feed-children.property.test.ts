/**
 * A visit's events and mileage travel with the visit when it is new to a device, and on their
 * own when they change; a write of the visit in place (its status, its EVV record: what every
 * timer event does, checked here through POST /visit-timer-events too) does not send them again
 * (migration 0024, `placed_txid`). The property drives random writes — visits in and out of the
 * window, events, mileage, visits written in place, moved, deleted, restored — between diffs,
 * and requires after each diff that what a device applying every diff shows (its visits, and
 * the children of those visits) is exactly a full read's rows at the same versions. Between
 * them, a poke's diff of one table (feed.ts `streamTable`, the cursor unmoved): after one, the
 * table's children of every visit both the device and a full read show are the full read's.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { sql } from 'drizzle-orm';
import type { Change } from '@fieldchart/schema/sync';
import { addDays } from '@fieldchart/schema/rules';
import { WINDOW_DAYS_AHEAD, WINDOW_DAYS_BACK, type FeedTable } from '../../../server/src/services/sync/feed.ts';
import { feedOf } from '../../../server/src/sync/service-hooks.ts';
import { forEachBackend } from '../../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { createPatient, gps, scheduleVisit, utcClinician } from '../visits/visit-fixtures.ts';

type Op =
  | { kind: 'visit'; day: number }
  | { kind: 'event'; pick: number }
  | { kind: 'mileage'; pick: number }
  | { kind: 'touch'; pick: number }
  | { kind: 'move'; pick: number; day: number }
  | { kind: 'delete'; pick: number }
  | { kind: 'restore'; pick: number }
  | { kind: 'feed' }
  | { kind: 'feed-table'; tables: FeedTable[] };

/** Days from today: inside the window, at its edges, and outside it on both sides. */
const day = fc.oneof(
  fc.integer({ min: -WINDOW_DAYS_BACK, max: WINDOW_DAYS_AHEAD }),
  fc.constantFrom(-WINDOW_DAYS_BACK - 1, WINDOW_DAYS_AHEAD + 1, -WINDOW_DAYS_BACK - 10, WINDOW_DAYS_AHEAD + 10),
);
const pick = fc.nat(20);
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: day.map<Op>((d) => ({ kind: 'visit', day: d })) },
  { weight: 4, arbitrary: pick.map<Op>((p) => ({ kind: 'event', pick: p })) },
  { weight: 2, arbitrary: pick.map<Op>((p) => ({ kind: 'mileage', pick: p })) },
  { weight: 4, arbitrary: pick.map<Op>((p) => ({ kind: 'touch', pick: p })) },
  { weight: 2, arbitrary: fc.tuple(pick, day).map<Op>(([p, d]) => ({ kind: 'move', pick: p, day: d })) },
  { weight: 1, arbitrary: pick.map<Op>((p) => ({ kind: 'delete', pick: p })) },
  { weight: 1, arbitrary: pick.map<Op>((p) => ({ kind: 'restore', pick: p })) },
  { weight: 3, arbitrary: fc.constant<Op>({ kind: 'feed' }) },
  {
    weight: 4,
    arbitrary: fc
      .constantFrom<FeedTable[]>(['timer_events'], ['visit_mileage'], ['visits', 'timer_events'], ['visits'], ['timer_events', 'visit_mileage'])
      .map<Op>((tables) => ({ kind: 'feed-table', tables })),
  },
);

const CHILDREN = new Set(['timer_events', 'visit_mileage']);

forEachBackend('feed: a visit’s children', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('a visit written in place is sent alone; moved into the window or restored, with its events and mileage', async () => {
    const db = server.runtime.services.unitOfWork.db;
    const feed = feedOf(server.runtime.services);
    const user = await registerUser(server);
    const now = new Date();
    const today = now.toISOString().slice(0, 10);
    const tablesOf = (changes: readonly Change[]) =>
      changes
        .filter((c) => c.table === 'visits' || CHILDREN.has(c.table))
        .map((c) => `${c.table}:${c.op}`)
        .sort();

    const id = randomUUID();
    await db.execute(sql`insert into visits (id, owner_id, visit_date, start_time) values (${id}::uuid, ${user.uuid}::uuid, ${addDays(today, WINDOW_DAYS_AHEAD + 5)}::date, '09:00')`);
    await db.execute(sql`insert into timer_events (visit_id, owner_id, event_type, event_time) values (${id}::uuid, ${user.uuid}::uuid, 'start_travel', now())`);
    await db.execute(sql`insert into visit_mileage (visit_id, owner_id, total_miles, recorded_at) values (${id}::uuid, ${user.uuid}::uuid, 3, now())`);
    const first = await feed.read(user.uuid, null, now);
    assert.deepEqual(tablesOf(first.changes), [], 'outside the window: nothing');

    await db.execute(sql`update visits set visit_date = ${today}::date where id = ${id}::uuid`);
    const moved = await feed.read(user.uuid, first.cursor, now);
    assert.deepEqual(tablesOf(moved.changes), ['timer_events:upsert', 'visit_mileage:upsert', 'visits:upsert'], 'moved into the window: with its children');

    await db.execute(sql`update visits set status = 'in_progress' where id = ${id}::uuid`);
    const touched = await feed.read(user.uuid, moved.cursor, now);
    assert.deepEqual(tablesOf(touched.changes), ['visits:upsert'], 'written in place: the visit alone');

    await db.execute(sql`update visits set deleted_at = now() where id = ${id}::uuid`);
    const deleted = await feed.read(user.uuid, touched.cursor, now);
    assert.deepEqual(tablesOf(deleted.changes), ['visits:delete']);
    await db.execute(sql`update visits set deleted_at = null where id = ${id}::uuid`);
    const restored = await feed.read(user.uuid, deleted.cursor, now);
    assert.deepEqual(tablesOf(restored.changes), ['timer_events:upsert', 'visit_mileage:upsert', 'visits:upsert'], 'restored: with its children');
  });

  test('through REST: a timer event sends its visit and itself, not the visit’s earlier events', async () => {
    const feed = feedOf(server.runtime.services);
    const u = await utcClinician(server);
    const now = new Date();
    const patient = await createPatient(server, u);
    const visit = await scheduleVisit(server, u, { patient_uuid: patient.uuid, visit_date: now.toISOString().slice(0, 10), start_time: '09:00' });
    const post = async (event_type: string, minutes: number) => {
      const event_time = new Date(now.getTime() - minutes * 60_000).toISOString();
      const res = await server.api('POST', '/visit-timer-events', { token: u.token, body: { schedule_uuid: visit, events: [{ event_type, event_time, ...gps }] } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return event_time;
    };
    await post('start_travel', 30);
    const before = await feed.read(u.uuid, null, now);
    const arrived = await post('arrive', 10);
    const diff = await feed.read(u.uuid, before.cursor, now);
    const sent = diff.changes.filter((c) => c.table === 'visits' || CHILDREN.has(c.table));
    assert.deepEqual(sent.map((c) => `${c.table}:${c.op}`).sort(), ['timer_events:upsert', 'visits:upsert']);
    const event = sent.find((c) => c.table === 'timer_events');
    assert.equal(event?.op === 'upsert' ? event.row.event_type : null, 'arrive');
    assert.equal(event?.op === 'upsert' ? event.row.event_time : null, arrived);
  });

  test('property: a device applying every diff shows exactly a full read (its visits, and their events and mileage), table diffs between', async () => {
    const db = server.runtime.services.unitOfWork.db;
    const feed = feedOf(server.runtime.services);
    const now = new Date();
    const today = now.toISOString().slice(0, 10);
    let tick = 0;

    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 4, maxLength: 30 }), async (ops) => {
        const user = await registerUser(server);
        const ids: string[] = [];
        const visitOf = new Map<string, string>();
        const device = new Map<string, Change>();
        let cursor: string | null = null;
        let zone: string | undefined;
        const tableSince = new Map<string, string>();
        const key = (c: Pick<Change, 'table' | 'id'>) => `${c.table}/${c.id}`;
        /** What a device shows: its visits, and the children of those. */
        const shown = (rows: Iterable<Change>): Map<string, number> => {
          const all = [...rows].filter((c) => c.op === 'upsert');
          const visitIds = new Set(all.filter((c) => c.table === 'visits').map((c) => c.id));
          return new Map(all.filter((c) => c.table === 'visits' || (CHILDREN.has(c.table) && visitIds.has(visitOf.get(key(c)) ?? ''))).map((c) => [key(c), c.version]));
        };
        const target = (p: number) => ids[p % Math.max(ids.length, 1)];
        const apply = (changes: readonly Change[]) => {
          for (const c of changes) {
            if (c.op === 'delete') device.delete(key(c));
            else device.set(key(c), c);
          }
        };
        const fullDiff = async () => {
          const read = await feed.read(user.uuid, cursor, now, zone ? { timeZone: zone } : {});
          apply(read.changes);
          cursor = read.cursor;
          zone = read.timeZone;
          tableSince.clear();
          const full = await feed.read(user.uuid, null, now);
          assert.deepEqual(shown(device.values()), shown(full.changes));
        };
        for (const o of [...ops, { kind: 'feed' } as const]) {
          const v = target('pick' in o ? o.pick : 0);
          switch (o.kind) {
            case 'visit': {
              const id = randomUUID();
              ids.push(id);
              await db.execute(sql`insert into visits (id, owner_id, visit_date, start_time) values (${id}::uuid, ${user.uuid}::uuid, ${addDays(today, o.day)}::date, '09:00')`);
              break;
            }
            case 'event': {
              if (!v) break;
              tick++;
              const event = randomUUID();
              await db.execute(sql`insert into timer_events (id, visit_id, owner_id, event_type, event_time)
                values (${event}::uuid, ${v}::uuid, ${user.uuid}::uuid, 'arrive', now() + ${`${tick} seconds`}::interval)`);
              visitOf.set(`timer_events/${event}`, v);
              break;
            }
            case 'mileage':
              if (!v) break;
              await db.execute(sql`insert into visit_mileage (visit_id, owner_id, total_miles, recorded_at) values (${v}::uuid, ${user.uuid}::uuid, 1, now())
                on conflict (visit_id) do update set total_miles = visit_mileage.total_miles + 1`);
              visitOf.set(`visit_mileage/${v}`, v);
              break;
            case 'touch':
              if (v) await db.execute(sql`update visits set status = 'in_progress', drive_seconds = coalesce(drive_seconds, 0) + 60 where id = ${v}::uuid`);
              break;
            case 'move':
              if (v) await db.execute(sql`update visits set visit_date = ${addDays(today, o.day)}::date where id = ${v}::uuid`);
              break;
            case 'delete':
              if (v) await db.execute(sql`update visits set deleted_at = now() where id = ${v}::uuid and deleted_at is null`);
              break;
            case 'restore':
              if (v) await db.execute(sql`update visits set deleted_at = null where id = ${v}::uuid`);
              break;
            case 'feed-table': {
              if (cursor === null) break;
              const changes: Change[] = [];
              // As the socket does: from where the tables were last read together, else from the cursor.
              const since = o.tables.map((t) => tableSince.get(t) ?? null);
              const from = since.every((s) => s === since[0]) ? (since[0] ?? null) : null;
              const end = await feed.streamTable(user.uuid, o.tables, cursor, from, now, { ...(zone ? { timeZone: zone } : {}) }, {
                change: (json) => changes.push(JSON.parse(json) as Change),
              });
              // Declined (a visit placed anew, say): the socket runs the full diff.
              if (!end) {
                await fullDiff();
                break;
              }
              for (const t of o.tables) tableSince.set(t, end.snapshot);
              apply(changes);
              const full = await feed.read(user.uuid, null, now);
              const onDevice = shown(device.values());
              const inFull = shown(full.changes);
              const visitsOf = (m: Map<string, number>) => new Map([...m].filter(([k]) => k.startsWith('visits/')));
              // With visits read, the device's visits are the full read's.
              if (o.tables.includes('visits')) assert.deepEqual(visitsOf(onDevice), visitsOf(inFull), 'visits after their table diff');
              const both = new Set([...visitsOf(onDevice).keys()].filter((k) => inFull.has(k)).map((k) => k.slice('visits/'.length)));
              for (const table of o.tables.filter((t) => CHILDREN.has(t))) {
                const ofTable = (rows: Iterable<Change>) =>
                  new Map([...rows].filter((c) => c.op === 'upsert' && c.table === table && both.has(visitOf.get(key(c)) ?? '')).map((c) => [key(c), c.version]));
                assert.deepEqual(ofTable(device.values()), ofTable(full.changes), `${table} after a table diff of ${o.tables.join(', ')}`);
              }
              break;
            }
            case 'feed':
              await fullDiff();

          }
        }
      }),
      {
        numRuns: 25,
        verbose: 1,
        // A visit placed anew (rescheduled into the window) with events and mileage from before:
        // a diff of visits and events alone must give way to the full diff, which brings them.
        examples: [
          [
            [
              { kind: 'visit', day: WINDOW_DAYS_AHEAD + 10 },
              { kind: 'event', pick: 0 },
              { kind: 'mileage', pick: 0 },
              { kind: 'feed' },
              { kind: 'move', pick: 0, day: 0 },
              { kind: 'feed-table', tables: ['visits', 'timer_events'] },
              { kind: 'feed-table', tables: ['visit_mileage'] },
            ],
          ],
        ],
      },
    );
  });
});
