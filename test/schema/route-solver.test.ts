/**
 * The route solver against brute force on random instances (asymmetric travel times, with and
 * without a home base, with and without lock_first), and the plan's times and totals on a day
 * worked out by hand.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  bruteForceRoute,
  driveMinutesForRoadMiles,
  greatCircleLeg,
  haversineMiles,
  planRoute,
  routeCost,
  solveRoute,
  type RouteProblem,
} from '@fieldchart/schema/routing';

const instance = fc.integer({ min: 1, max: 8 }).chain((n) =>
  fc.record({
    cost: fc.array(fc.array(fc.integer({ min: 0, max: 500 }), { minLength: n, maxLength: n }), { minLength: n, maxLength: n }),
    start: fc.option(fc.array(fc.integer({ min: 0, max: 500 }), { minLength: n, maxLength: n }), { nil: undefined }),
    end: fc.option(fc.array(fc.integer({ min: 0, max: 500 }), { minLength: n, maxLength: n }), { nil: undefined }),
    first: fc.option(fc.integer({ min: 0, max: n - 1 }), { nil: undefined }),
  }),
);

test('solveRoute finds the brute-force optimum on random instances (n ≤ 8)', () => {
  fc.assert(
    fc.property(instance, (p: RouteProblem) => {
      const exact = solveRoute(p);
      const brute = bruteForceRoute(p);
      const n = p.cost.length;
      assert.deepEqual([...exact.order].sort((a, b) => a - b), Array.from({ length: n }, (_, i) => i), 'a permutation of the visits');
      if (p.first !== undefined) assert.equal(exact.order[0], p.first, 'lock_first keeps the visit first');
      assert.equal(exact.cost, routeCost(p, exact.order), 'the reported cost is the cost of the order');
      assert.equal(exact.cost, brute.cost);
    }),
    { numRuns: 300 },
  );
});

test('the home base is the start and the end: a route must come back', () => {
  // Points on a line at 0, 1, 2, 10; home at 10. Without home the best is 0→1→2→10 or reversed (10);
  // with the home base at 10 going out to 0 and back costs 20 whichever the order of the near ones.
  const xs = [0, 1, 2, 10];
  const cost = xs.map((a) => xs.map((b) => Math.abs(a - b)));
  assert.equal(solveRoute({ cost }).cost, 10);
  const home = { start: xs.map((x) => Math.abs(10 - x)), end: xs.map((x) => Math.abs(10 - x)) };
  const r = solveRoute({ cost, ...home });
  assert.equal(r.cost, 20);
  assert.equal(r.order[0], 3, 'leaves home for the visit at home first');
  // One-way home (start only) ends at the far end.
  assert.deepEqual(solveRoute({ cost, start: home.start }).order, [3, 2, 1, 0]);
});

test('the great-circle model: circuity 1.3, time continuous and increasing with distance', () => {
  const columbus = { lat: 39.9612, lng: -82.9988 };
  const cleveland = { lat: 41.4993, lng: -81.6944 };
  const crow = haversineMiles(columbus, cleveland);
  assert.ok(crow > 120 && crow < 130, `Columbus–Cleveland ≈ 125 mi as the crow flies, got ${crow}`);
  assert.ok(Math.abs(greatCircleLeg(columbus, cleveland).miles - crow * 1.3) < 1e-9);
  assert.equal(driveMinutesForRoadMiles(0), 0);
  let prev = driveMinutesForRoadMiles(0.1);
  for (let m = 0.2; m < 60; m += 0.1) {
    const t = driveMinutesForRoadMiles(m);
    assert.ok(t > prev, `increasing at ${m}`);
    assert.ok(t - prev < 0.5, `no jump at ${m}`);
    prev = t;
  }
  // 3 mi at 20 mph = 9 min, + 2 overhead.
  assert.ok(Math.abs(driveMinutesForRoadMiles(3) - 11) < 1e-9);
});

test('planRoute: suggested times are durations + buffers + legs from day_start, savings against the current order', () => {
  // Three visits and a home base (index 3). Current order A, B, C; the best is home→C→A→B→home?
  // Symmetric line: home 0, A at 30, B at 40, C at 10 (minutes). Best: home→C→A→B→home = 10+20+10+40 = 80.
  // Current: home→A→B→C→home = 30+10+30+10 = 80 too; make C at 5 and B at 35 to separate them.
  const pos = [30, 35, 5, 0];
  const minutes = pos.map((a) => pos.map((b) => Math.abs(a - b)));
  const miles = minutes.map((row) => row.map((m) => m / 2));
  const visits = [
    { id: 'A', startTime: '09:00', durationMinutes: 45 },
    { id: 'B', startTime: '10:00', durationMinutes: 30 },
    { id: 'C', startTime: '11:00', durationMinutes: 60 },
  ];
  const out = planRoute({ visits, minutes, miles, home: true, lockFirst: false, dayStart: '08:00', bufferMinutes: 10 });
  assert.ok(out.ok);
  // Orders: C,A,B: 5+25+5+35 = 70; current A,B,C: 30+5+30+5 = 70 … equal; B,A,C: 35+5+25+5 = 70. All loops on a line cost
  // twice the span: the optimum equals the current cost here, so savings are 0.
  assert.equal(out.plan.total_drive_minutes, 70);
  assert.deepEqual(out.plan.savings, { minutes: 0, miles: 0 });
  const first = out.plan.visits[0]!;
  assert.equal(first.suggested_start_time, `08:${String(first.drive_minutes).padStart(2, '0')}`);

  // Without a home base: the current order A,B,C drives 5 + 30 = 35; the best, C,A,B (or B,A,C), 25 + 5 = 30.
  const open = planRoute({ visits, minutes, miles, home: false, lockFirst: false, dayStart: '08:00', bufferMinutes: 10 });
  assert.ok(open.ok);
  assert.equal(open.plan.total_drive_minutes, 30);
  assert.deepEqual(open.plan.savings, { minutes: 5, miles: 2.5 });
  const [v1, v2, v3] = open.plan.visits;
  assert.deepEqual(
    open.plan.visits.map((v) => v.schedule_uuid),
    ['C', 'A', 'B'],
    'ties broken towards the first order found (lower indices first among equals)',
  );
  assert.deepEqual([v1!.suggested_start_time, v1!.drive_minutes], ['08:00', 0]);
  // C lasts 60, buffer 10, drive 25 → 09:35; A lasts 45, buffer 10, drive 5 → 10:35.
  assert.deepEqual([v2!.suggested_start_time, v2!.drive_minutes, v2!.drive_miles], ['09:35', 25, 12.5]);
  assert.deepEqual([v3!.suggested_start_time, v3!.drive_minutes], ['10:35', 5]);

  // lock_first: A stays first at its own time (09:00); then B (5) and C (30) — the best with A first.
  const locked = planRoute({ visits, minutes, miles, home: false, lockFirst: true, dayStart: '08:00', bufferMinutes: 10 });
  assert.ok(locked.ok);
  assert.deepEqual(locked.plan.visits.map((v) => [v.schedule_uuid, v.suggested_start_time]), [['A', '09:00'], ['B', '10:00'], ['C', '11:10']]);

  // A day that would run past midnight is refused, not wrapped.
  const late = planRoute({ visits, minutes, miles, home: false, lockFirst: false, dayStart: '22:30', bufferMinutes: 10 });
  assert.equal(late.ok, false);
});

test('more than 12 visits are refused', () => {
  const n = 13;
  const zero = Array.from({ length: n }, () => new Array<number>(n).fill(1));
  const visits = Array.from({ length: n }, (_, i) => ({ id: String(i), startTime: '08:00', durationMinutes: 30 }));
  const out = planRoute({ visits, minutes: zero, miles: zero, home: false, lockFirst: false, dayStart: '08:00', bufferMinutes: 0 });
  assert.deepEqual(out.ok ? null : out.reason, 'too_many_visits');
  assert.throws(() => solveRoute({ cost: zero }), RangeError);
});
