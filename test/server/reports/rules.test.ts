/** The report rules as pure functions: no database, no server. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { problemsOf } from '../../../server/src/services/reports/dashboard.ts';
import { earningsFor, reimbursableMiles } from '../../../server/src/services/reports/earnings.ts';
import { summaryTotals, timeSavedFrom, TIME_SAVED_MIN_SAMPLE } from '../../../server/src/services/reports/summary.ts';
import { type VisitFact } from '../../../server/src/services/reports/visit-facts.ts';
import { addDays, weekStart } from '@fieldchart/schema/rules';
import { planVisits } from '../../../server/src/services/seed/demo-seed.ts';

let n = 0;
function fact(over: Partial<VisitFact>): VisitFact {
  n++;
  return {
    id: `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`,
    ownerId: 'u',
    patientId: null,
    visitDate: '2026-06-17',
    startTime: '09:00',
    status: 'completed',
    visitType: 'routine',
    aiAssisted: false,
    arrivedAt: null,
    completedAt: null,
    driveSeconds: null,
    onsiteSeconds: null,
    documentationSeconds: null,
    noteId: null,
    noteSubmittedAt: null,
    noteSignedAt: null,
    vitalFlags: [],
    reviewFlags: [],
    totalMiles: null,
    travelMiles: null,
    onsiteMiles: null,
    ...over,
  };
}

test('weeks start on Monday; dates roll over months and years', () => {
  assert.equal(weekStart('2026-06-21'), '2026-06-15'); // Sunday
  assert.equal(weekStart('2026-06-15'), '2026-06-15'); // Monday
  assert.equal(weekStart('2027-01-01'), '2026-12-28');
  assert.equal(addDays('2026-03-01', -1), '2026-02-28');
});

test('late documentation starts exactly 24 h after arrival, in the clinician\'s zone without one', () => {
  const arrived = fact({ status: 'in_progress', arrivedAt: new Date('2026-06-16T13:00:00Z') });
  assert.deepEqual(problemsOf(arrived, new Date('2026-06-17T12:59:59Z'), 'America/New_York'), []);
  assert.deepEqual(problemsOf(arrived, new Date('2026-06-17T13:00:00Z'), 'America/New_York'), ['late_documentation']);
  // Completed without arrival: 09:00 in Los Angeles is 16:00Z; due 24 h later.
  const noArrival = fact({ visitDate: '2026-06-16' });
  assert.deepEqual(problemsOf(noArrival, new Date('2026-06-17T15:59:00Z'), 'America/Los_Angeles'), []);
  assert.deepEqual(problemsOf(noArrival, new Date('2026-06-17T16:00:00Z'), 'America/Los_Angeles'), ['late_documentation']);
  // Never started, cancelled: never a problem note.
  assert.deepEqual(problemsOf(fact({ status: 'scheduled', visitDate: '2026-01-01' }), new Date('2026-06-17T00:00:00Z'), 'UTC'), []);
  assert.deepEqual(problemsOf(fact({ status: 'cancelled', arrivedAt: new Date('2026-01-01') }), new Date('2026-06-17T00:00:00Z'), 'UTC'), []);
  const both = fact({ noteId: 'n', noteSubmittedAt: new Date(), reviewFlags: ['x'] });
  assert.deepEqual(problemsOf(both, new Date(), 'UTC'), ['unsigned', 'review_flags']);
});

test('earnings round to cents; travel miles when split, total otherwise; unknown visit types pay 0', () => {
  assert.equal(reimbursableMiles({ totalMiles: 12, travelMiles: null }), 12);
  assert.equal(reimbursableMiles({ totalMiles: 12, travelMiles: 9.5 }), 9.5);
  const facts = [
    fact({ visitType: 'routine', totalMiles: 13.3, travelMiles: null }),
    fact({ visitType: 'home_safety', totalMiles: 1, travelMiles: 1, onsiteMiles: 0 }),
    fact({ visitType: 'routine', status: 'missed', totalMiles: 50 }),
  ];
  const p = earningsFor(facts, '2026-06-01', '2026-06-30', { time_zone: 'UTC', pay_rates: { routine: 80.5 }, mileage_rate: 0.655 });
  assert.deepEqual(
    { pay: p.visit_pay, miles: p.reimbursable_miles, reimb: p.mileage_reimbursement, total: p.total, visits: p.completed_visits },
    { pay: 80.5, miles: 14.3, reimb: 9.37, total: 89.87, visits: 2 },
  );
  assert.deepEqual(p.by_visit_type[0], { visit_type: 'home_safety', visits: 1, rate: 0, amount: 0 });
});

test('summary totals: travel and onsite only from visits with both halves of the split', () => {
  const t = summaryTotals([
    fact({ totalMiles: 10, travelMiles: 7, onsiteMiles: 3 }),
    fact({ totalMiles: 5 }),
    fact({ totalMiles: 4, travelMiles: 4, onsiteMiles: null }),
    fact({}),
  ]);
  assert.deepEqual([t.visits, t.visits_with_mileage, t.visits_with_split, t.total_miles, t.travel_miles, t.onsite_miles], [4, 3, 1, 19, 7, 3]);
});

test('time saved: no claim below the minimum sample; a negative saving is reported as such', () => {
  const timed = (ai: boolean, seconds: number, count: number) =>
    Array.from({ length: count }, () => fact({ aiAssisted: ai, documentationSeconds: seconds }));
  const meta = { scope: 'me' as const, from: '2026-01-01', to: '2026-03-31' };
  const thin = timeSavedFrom([...timed(true, 300, TIME_SAVED_MIN_SAMPLE - 1), ...timed(false, 900, 40)], meta);
  assert.equal(thin.sufficient_data, false);
  assert.match(thin.note ?? '', /9 AI-assisted/);
  assert.equal(thin.minutes_saved_per_visit, null);
  const slower = timeSavedFrom([...timed(true, 1200, 10), ...timed(false, 900, 10)], meta);
  assert.equal(slower.sufficient_data, true);
  assert.equal(slower.minutes_saved_per_visit, -5);
  assert.equal(slower.total_minutes_saved, -50);
});

test('the demo plan: three weeks, visits today even on a weekend, one visit per slot', () => {
  for (const today of ['2026-11-21', '2026-11-23']) {
    const plan = planVisits(today);
    assert.ok(plan.some((v) => v.date === today));
    assert.ok((plan[0]?.date ?? '') >= addDays(today, -14));
    assert.ok(plan.every((v) => v.date <= addDays(today, 6)));
    assert.equal(new Set(plan.map((v) => `${v.date} ${v.start}`)).size, plan.length);
  }
});
