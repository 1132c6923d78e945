/**
 * The feed's window is worked out once per zone and UTC quarter hour (feed.ts `windowOf`): that
 * holds only if no zone's date changes inside a quarter hour. The property asks the window for
 * one instant — which the cache then keeps — and then for another up to an hour away, in any
 * zone this runtime knows, near local midnights, and requires the answer to be the one worked
 * out from scratch for that second instant (an hour's bucket fails it: Indian/Cocos is +6:30).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { addDays, localDate } from '@fieldchart/schema/rules';
import { WINDOW_DAYS_AHEAD, WINDOW_DAYS_BACK, windowOf } from '../../../server/src/services/sync/feed.ts';

const QUARTER_HOUR_MS = 15 * 60_000;
const zones = Intl.supportedValuesOf('timeZone');

function fromScratch(now: Date, timeZone: string): { from: string; to: string } {
  const today = localDate(now, timeZone);
  return { from: addDays(today, -WINDOW_DAYS_BACK), to: addDays(today, WINDOW_DAYS_AHEAD) };
}

test('the cached window is the one worked out from scratch, whatever was asked just before (a zone’s date is the same throughout a UTC quarter hour)', () => {
  // Quarter hours within 14 hours of a UTC midnight, 2000–2040: every zone's local midnight
  // (where its date changes) falls among them. Instants at a quarter's edges as often as inside.
  const day = fc.integer({ min: Date.UTC(2000, 0, 1) / 86_400_000, max: Date.UTC(2040, 0, 1) / 86_400_000 });
  const quarterNearMidnight = fc.tuple(day, fc.integer({ min: -56, max: 56 })).map(([d, k]) => d * 96 + k);
  const within = fc.oneof(fc.constant(0), fc.constant(QUARTER_HOUR_MS - 1), fc.nat(QUARTER_HOUR_MS - 1));
  fc.assert(
    // The first ask is up to an hour away: any longer bucket than a quarter would be caught.
    fc.property(quarterNearMidnight, fc.constantFrom(...zones), within, within, fc.integer({ min: -4, max: 4 }), (q, zone, first, second, away) => {
      const start = q * QUARTER_HOUR_MS;
      windowOf(new Date(start + first + away * QUARTER_HOUR_MS), zone);
      const later = new Date(start + second);
      assert.deepEqual(windowOf(later, zone), fromScratch(later, zone));
    }),
    { numRuns: 20_000 },
  );
});
