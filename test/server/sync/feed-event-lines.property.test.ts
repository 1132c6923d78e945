/**
 * The feed writes a timer event's change message in the database, by concatenation
 * (server/src/services/sync/feed.ts `eventChange`). It must be the JSON that
 * `json_build_object` made of the same row — the oracle here, as the feed wrote it before —
 * for any stored event: every type, times to the microsecond (the millisecond is sent), any
 * coordinate or accuracy or none, upserts in a full read and in a diff, deletes in a diff; and
 * every upsert's row a `timer_events` row of the sync contract.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { inArray, sql } from 'drizzle-orm';
import { timerEvents, visits } from '@fieldchart/schema/db';
import { FEED_ROWS, type Change } from '@fieldchart/schema/sync';
import { rowsOf } from '../../../server/src/db/database.ts';
import { feedOf } from '../../../server/src/sync/service-hooks.ts';
import { forEachBackend } from '../../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';

const TYPES = ['start_travel', 'arrive', 'start_documentation', 'complete'] as const;
// -0 is left out: JSON writes it as 0 on one side and -0 on the other, the same number to a device.
const double = (max: number) => fc.option(fc.double({ min: -max, max, noNaN: true }).filter((x) => !Object.is(x, -0)), { nil: null });
const eventArb = fc.record({
  type: fc.constantFrom(...TYPES),
  at: fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2099-12-31T23:59:59Z'), noInvalidDate: true }),
  micros: fc.integer({ min: 0, max: 999 }),
  latitude: fc.oneof(double(90), fc.constantFrom(0, 1, -1, 41.878113, 1e-7)),
  longitude: double(180),
  accuracy: fc.oneof(double(1e6), fc.constantFrom(0, 5, 1e21, 1.5e-10)),
  deleted: fc.boolean(),
});

/** The change as `json_build_object` wrote it (the feed's expression before the concatenation). */
const ORACLE = sql`(case when ${timerEvents.deletedAt} is not null
    then json_build_object('table', 'timer_events', 'op', 'delete', 'id', ${timerEvents.id}, 'version', ${timerEvents.rowVersion})
    else json_build_object('table', 'timer_events', 'op', 'upsert', 'id', ${timerEvents.id}, 'version', ${timerEvents.rowVersion}, 'row', json_build_object(
      'uuid', ${timerEvents.id},
      'schedule_uuid', ${timerEvents.visitId},
      'event_type', ${timerEvents.eventType},
      'event_time', to_char(${timerEvents.eventTime} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
      'latitude', ${timerEvents.latitude},
      'longitude', ${timerEvents.longitude},
      'accuracy', ${timerEvents.accuracy}))
  end)::text`;

forEachBackend('feed timer event lines', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('property: each timer event change is the JSON json_build_object made of its row, in a full read and in a diff', async () => {
    const db = server.runtime.services.unitOfWork.db;
    const feed = feedOf(server.runtime.services);
    const today = new Date().toISOString().slice(0, 10);

    /** The feed's timer event changes against the oracle's, for these events. */
    const expectOracle = async (changes: readonly Change[], ids: readonly string[]) => {
      const oracle = rowsOf<{ id: string; change: string }>(
        await db.execute(sql`select ${timerEvents.id} as id, ${ORACLE} as change from ${timerEvents} where ${inArray(timerEvents.id, [...ids])}`),
      );
      const sent = new Map(changes.filter((c) => c.table === 'timer_events').map((c) => [c.id, c]));
      assert.equal(oracle.length, ids.length);
      for (const { id, change } of oracle) {
        const c = sent.get(id);
        assert.ok(c, `event ${id} is in the feed`);
        assert.deepEqual(c, JSON.parse(change));
        if (c.op === 'upsert') assert.ok(FEED_ROWS.timer_events.safeParse(c.row).success, JSON.stringify(c.row));
      }
    };

    await fc.assert(
      fc.asyncProperty(fc.array(eventArb, { minLength: 1, maxLength: 8 }), async (specs) => {
        const user = await registerUser(server);
        // A visit per event: the (visit, type, time) key never collides.
        const visitIds = specs.map(() => randomUUID());
        await db.insert(visits).values(visitIds.map((id) => ({ id, ownerId: user.uuid, visitDate: today, startTime: '08:00' })));
        const ids = specs.map(() => randomUUID());
        await db.insert(timerEvents).values(
          specs.map((s, i) => ({
            id: ids[i] as string,
            visitId: visitIds[i] as string,
            ownerId: user.uuid,
            eventType: s.type,
            eventTime: s.at,
            latitude: s.latitude,
            longitude: s.longitude,
            accuracy: s.accuracy,
          })),
        );
        for (const [i, s] of specs.entries()) {
          if (s.micros === 0) continue;
          const us = sql.raw(`interval '${s.micros} microseconds'`);
          await db.execute(sql`update ${timerEvents} set event_time = event_time + ${us} where id = ${ids[i]}::uuid`);
        }
        const full = await feed.read(user.uuid, null, new Date());
        await expectOracle(full.changes, ids);

        // A diff: every event written again, the deleted ones as tombstones.
        for (const [i, s] of specs.entries()) {
          await db.execute(sql`update ${timerEvents} set deleted_at = ${s.deleted ? sql`now()` : sql`null`}, accuracy = accuracy where id = ${ids[i]}::uuid`);
        }
        const diff = await feed.read(user.uuid, full.cursor, new Date());
        assert.equal(diff.reset, null);
        await expectOracle(diff.changes, ids);
      }),
      { numRuns: 25 },
    );
  });
});
