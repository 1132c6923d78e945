/**
 * The performance table is built from the JSON line each bench prints last: every figure
 * beside the baseline of the same run, and the table replaced between its markers only.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { figuresOf, performanceTable, TABLE_END, TABLE_START, withTable } from '../../bench/support/perf-table.ts';

const reconcile = {
  bench: 'sync-reconcile',
  backend: 'pglite',
  results: [
    { mutations: 10000, path: 'batched insert', ms: 6014.4, mutationsPerSec: 1663, timeRatioToBatchedInsert: 1 },
    { mutations: 10000, path: 'sync', ms: 29992, mutationsPerSec: 333, timeRatioToBatchedInsert: 4.99 },
  ],
};
const restFloor = {
  bench: 'rest-floor',
  backend: 'postgres',
  results: [{ endpoint: 'GET /my-profile', floor: { reqPerSec: 818.4, p99Ms: 103 }, project: { reqPerSec: 365, p99Ms: 134 }, ratio: 0.446, p99Ratio: 1.301 }],
};
const propagation = {
  bench: 'sync-propagation',
  backend: 'postgres',
  idleDevices: 100,
  writeToDeviceVsFloor: { p50: 1.26, p99: 1.17 },
  results: [
    { path: 'floor', p50Ms: 24.86, p99Ms: 134.13 },
    { path: 'write→device', p50Ms: 31.28, p99Ms: 156.59 },
  ],
};

test('each bench result gives its figures beside the same run’s baseline', () => {
  const [sync, ...rest] = figuresOf(reconcile);
  assert.equal(rest.length, 0, 'the baseline is not a row of its own');
  assert.deepEqual(sync, {
    bench: 'sync-reconcile',
    backend: 'pglite',
    measure: '10,000 queued mutations, sync (mutations/s)',
    figure: '29,992.0 ms (333/s)',
    baseline: 'one batched insert 6,014.4 ms',
    ratio: '4.99× time',
  });
  assert.deepEqual(figuresOf(restFloor)[0]?.ratio, '0.45× req/s, 1.30× p99');
  assert.match(figuresOf(propagation)[0]?.figure ?? '', /^31\.3 ms \/ 156\.6 ms$/);
  assert.equal(figuresOf({ bench: 'something-new' })[0]?.measure, '(no table rows for this bench yet)');
  const day = figuresOf({ bench: 'load-day', backend: 'pglite', clinicians: 200, reqPerSec: 57.85, errorRate: 0, p50Ms: 1000, p99Ms: 4900, sync: {}, rssGrowthLastThird: 0.019, rssFlat: true });
  assert.equal(day[0]?.figure, '57.9 req/s, 0.00 % errors, 1,000.0 ms / 4,900.0 ms');
  assert.equal(day[2]?.ratio, 'flat');
  const healthz = figuresOf({
    bench: 'healthz-under-load',
    backend: 'pglite',
    idle: { p50Ms: 1.5, p99Ms: 6 },
    results: [{ name: 'upcoming', target: 'GET /get-upcomming-visits at 150 req/s', healthz: { p50Ms: 8, p99Ms: 30 }, ratio: 5 }],
  });
  assert.deepEqual(healthz[0], {
    bench: 'healthz-under-load',
    backend: 'pglite',
    measure: '/healthz p50 (p99) under GET /get-upcomming-visits at 150 req/s',
    figure: '8.00 ms (30.0 ms)',
    baseline: 'idle 1.50 ms (6.00 ms)',
    ratio: '5.00× p99',
  });
});

test('the table replaces only what is between its markers, and is appended once when absent', () => {
  const table = performanceTable([reconcile, restFloor], 'test machine');
  assert.match(table, /\| sync-reconcile \| pglite \| 10,000 queued mutations/);
  const readme = `# Benches\n\nintro\n\n${TABLE_START}\nold\n${TABLE_END}\n\n## after\n`;
  const once = withTable(readme, table);
  assert.ok(once.startsWith('# Benches\n\nintro\n\n'));
  assert.ok(once.endsWith(`${TABLE_END}\n\n## after\n`));
  assert.ok(!once.includes('\nold\n'));
  assert.equal(withTable(once, table), once, 'regenerating with the same figures changes nothing');
  const appended = withTable('# Benches\n', table);
  assert.equal(appended.split(TABLE_START).length, 2);
  assert.equal(withTable(appended, table), appended);
});
