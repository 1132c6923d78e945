/**
 * The per-node request tally behind the REST rate limits (services/request-rate.ts), against
 * a stand-in for the shared table: judged on shared total + unflushed count, a failed flush
 * loses no count, an ended window's unflushed count is dropped, close flushes the rest.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createRequestRate } from '../../server/src/services/request-rate.ts';
import type { Db } from '../../server/src/db/database.ts';
import type { Throttle } from '../../server/src/services/throttle.ts';
import { manualClock } from '../helpers/clock.ts';

/** The shared table as a map: key → hits, window start (fixed windows, as the SQL does). */
function sharedTable(clock: { now(): Date }) {
  const rows = new Map<string, { hits: number; started: number }>();
  const sent: Array<{ key: string; hits: number }> = [];
  let failNext = 0;
  const throttle = {
    async addMany(_db: Db, tallies: ReadonlyArray<{ parts: readonly string[]; hits: number; startedAt: Date }>, windowSeconds: number) {
      if (failNext > 0) {
        failNext -= 1;
        throw new Error('connection lost');
      }
      const now = clock.now().getTime();
      return tallies.map((t) => {
        const key = t.parts.join('/');
        let row = rows.get(key);
        if (t.hits > 0) {
          sent.push({ key, hits: t.hits });
          if (!row || row.started + windowSeconds * 1000 <= now) row = { hits: 0, started: t.startedAt.getTime() };
          row.hits += t.hits;
          rows.set(key, row);
        }
        const live = row && row.started + windowSeconds * 1000 > now;
        return { hits: live ? row!.hits : 0, retryAfterSeconds: 0, startedAt: new Date(row?.started ?? t.startedAt.getTime()) };
      });
    },
  } as unknown as Throttle;
  return { rows, sent, throttle, failNext: (n: number) => void (failNext = n) };
}

test('two tallies on one table: each judges on the shared total as of its flush plus its own unflushed count', async () => {
  const clock = manualClock(new Date('2026-11-23T09:00:00Z'));
  const table = sharedTable(clock);
  const a = createRequestRate({ db: {} as Db, clock, throttle: table.throttle });
  const b = createRequestRate({ db: {} as Db, clock, throttle: table.throttle });
  assert.equal(a.hit('user:1', 60).hits, 1);
  assert.equal(a.hit('user:1', 60).hits, 2);
  assert.equal(b.hit('user:1', 60).hits, 1, 'before any flush, b knows only its own request');
  await a.flush();
  await b.flush();
  assert.equal(b.hit('user:1', 60).hits, 4);
  await a.flush(); // a had nothing new: it only reads the total
  assert.equal(a.hit('user:1', 60).hits, 4, 'a knows of b\'s first request, not of its unflushed second');
  await a.close();
  await b.close();
});

test('a failed flush keeps its counts for the next; an ended window drops its unflushed count; close flushes', async () => {
  const clock = manualClock(new Date('2026-11-23T09:00:00Z'));
  const table = sharedTable(clock);
  const rate = createRequestRate({ db: {} as Db, clock, throttle: table.throttle });
  const errors: unknown[] = [];
  rate.reportErrorsTo((err) => errors.push(err));
  rate.hit('user:1', 60);
  rate.hit('user:1', 60);
  table.failNext(1);
  await rate.flush();
  assert.equal(errors.length, 1);
  assert.deepEqual(table.sent, []);
  rate.hit('user:1', 60);
  await rate.flush();
  assert.deepEqual(table.sent, [{ key: 'request-rate/user:1', hits: 3 }]);

  rate.hit('user:2', 60);
  clock.advance(61);
  await rate.flush();
  assert.equal(table.sent.length, 1, 'the ended window\'s request is not sent');
  assert.equal(rate.hit('user:1', 60).hits, 1, 'a new window starts at 1');
  await rate.close();
  assert.deepEqual(table.sent.at(-1), { key: 'request-rate/user:1', hits: 1 });
});
