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
  const audited = figuresOf({
    ...reconcile,
    results: [
      ...reconcile.results.slice(0, 1),
      { mutations: 10000, path: 'batched insert + audit', ms: 11200.5, mutationsPerSec: 893, timeRatioToBatchedInsert: 1.86, timeRatioToBatchedInsertWithAudit: 1 },
      { ...reconcile.results[1], timeRatioToBatchedInsertWithAudit: 2.68 },
    ],
  });
  assert.equal(audited.length, 1, 'the floor with the audit entries is a baseline too, not a row');
  assert.equal(audited[0]?.baseline, 'one batched insert 6,014.4 ms; with the audit entries 11,200.5 ms');
  assert.equal(audited[0]?.ratio, '4.99× time; 2.68× with the audit entries');
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

test('the field app cold start: each start beside the static list of the same run, and the bundle size', () => {
  const rows = figuresOf({
    bench: 'app-cold-start',
    backend: 'pglite',
    visitsListed: 6,
    results: [
      { start: 'static list', medianMs: 55.3, ratioToStatic: 1 },
      { start: 'app offline', medianMs: 4979.8, ratioToStatic: 90.05 },
    ],
    bundle: { bytes: 852994, gzipBytes: 244582 },
  });
  assert.deepEqual(
    rows.map((r) => [r.measure, r.figure, r.baseline, r.ratio]),
    [
      ['field app to first visit list (6 visits), app offline, median', '4,979.8 ms', 'static page with the same list 55.3 ms', '90.05× time'],
      ['field app JS + CSS, gzip (PGlite WASM and data apart)', '239 KiB', 'none (size)', '—'],
    ],
  );
});

test('opening the embedded database: each way beside PGlite’s own open of the same archive in the same run', () => {
  const rows = figuresOf({
    bench: 'embedded-open',
    backend: 'pglite',
    archiveBytes: 42_682_880,
    rounds: 5,
    liftoffOnly: true,
    results: [
      { name: 'PGlite.create, Blob (baseline)', wallMs: 1270, cpuMs: 1546, cpuRatio: 1 },
      { name: 'openDatabase, bytes, 16 MB buffers', wallMs: 678, cpuMs: 832.6, cpuRatio: 0.5385 },
    ],
  });
  assert.deepEqual(
    rows.map((r) => [r.measure, r.figure, r.baseline, r.ratio]),
    [['open from a 42.7 MB archive, openDatabase, bytes, 16 MB buffers, --liftoff-only (CPU)', '832.6 ms', 'PGlite.create, Blob 1,546.0 ms', '0.54× CPU']],
  );
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

test('a filtered run replaces the rows of the benches it measured and keeps the others with their own run', () => {
  const old = [
    'Regenerated by `npm run bench -- --table` (2 cores, AMD EPYC, Node v20.20.2, load average 7.08 at the end, 2026-11-23, flags --quick). Each ratio compares two figures measured in the same run.',
    '',
    '| bench | backend | measure | figure | baseline (same run) | ratio |',
    '|---|---|---|---|---|---|',
    '| rest-floor | postgres | stale row | 1 | 2 | 0.10× |',
    '| route-solver | — | exact route \\| 12 stops | 4.04 ms | brute force 146.9 ms | 36.37× faster |',
  ].join('\n');
  const table = performanceTable([{ ...restFloor, loadAverage: { before: 3.04, after: 4.5 } }], 'test machine', { date: '2026-11-27', previous: old });
  assert.ok(!table.includes('stale row'), 'the re-run bench and backend lose their old rows');
  assert.match(table, /\| rest-floor \| postgres \| GET \/my-profile req\/s \(p99\) \| .* \| 0\.45× req\/s, 1\.30× p99 \| 2026-11-27, load 3\.0→4\.5 \|/);
  assert.match(table, /\| route-solver \| — \| exact route \\\| 12 stops \| 4\.04 ms \| brute force 146\.9 ms \| 36\.37× faster \| 2026-11-23, load 7\.08 \|/, 'a kept row keeps its cells (an escaped bar too) and gets the old table’s run');
  const again = performanceTable([{ ...reconcile, loadAverage: { before: 1, after: 1 } }], 'test machine', { date: '2026-11-28', previous: table });
  assert.match(again, /\| rest-floor \| postgres \| .* \| 2026-11-27, load 3\.0→4\.5 \|/, 'a row written with its run column is kept as it was');
  assert.match(again, /\| sync-reconcile \| pglite \| .* \| 2026-11-28, load 1\.0→1\.0 \|/);
  assert.equal(again.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| bench')).length, 3);
  assert.equal(performanceTable([restFloor], 'm', { date: '2026-11-27' }).split('\n').filter((l) => l.startsWith('| rest-floor')).length, 1, 'without a previous table, only what ran');
});
