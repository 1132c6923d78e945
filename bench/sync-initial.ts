/**
 * Initial sync: a device with no cursor says hello; the time until `synced` (welcome, reset,
 * every `changes` batch parsed, the checkpoint), rows/s and megabytes sent, beside the same
 * rows read by plain selects on the same database in the same run:
 *
 *   select         the first sync's rows (patients, referrals, visits in the window, their
 *                  timer events, notes and mileage) by six selects in one REPEATABLE READ transaction, in the
 *                  servers' process — the baseline
 *   select+open    the same, with the PHI columns decrypted as the feed decrypts them
 *   sync           hello → synced over the websocket (a new client id each run)
 *
 * Data sets: `demo` (`fieldchart seed --demo`) and `bulk`: one clinician with 100k rows in
 * scope (1,000 patients, 1,000 referrals, 24,500 visits over the window, 73,500 timer events),
 * PHI sealed with the server's key ring. --quick (or BENCH_QUICK=1): 10k rows, fewer runs.
 *
 * Servers run in a child process (support/sync-servers.ts): PGlite by default, PostgreSQL when
 * BENCH_DATABASE_URL is set (the bulk rows are ANALYZEd there; on PGlite the tables that grew,
 * as the embedded server's own check does within ten seconds; BENCH_PGLITE_ANALYZE=1 for a
 * whole ANALYZE, =0 for none). BENCH_CPU_PROF=<dir> writes a CPU profile of the servers during
 * one bulk sync. Output: a table, then one JSON line (last on stdout).
 */
import os from 'node:os';
import { fmt, initialSync, machine, median, profiled, quick, ratio, startSyncServers, table } from './support/sync-peer.ts';

const BULK = quick ? { patients: 100, visits: 2_450, eventsPerVisit: 3 } : { patients: 1_000, visits: 24_500, eventsPerVisit: 3 };
const runsOn = (backend: string) =>
  // PGlite reads 100k rows in tens of seconds (it plans without statistics): one bulk run keeps
  // the default run near two minutes.
  quick ? { demo: 2, bulk: 1 } : { demo: 5, bulk: backend === 'pglite' ? 1 : 3 };

const loadBefore = os.loadavg()[0] ?? 0;
const child = await startSyncServers();
try {
  const s = child.servers;
  const RUNS = runsOn(s.backend);
  const demo = await child.rpc('seed-demo', {});
  const bulkUser = await child.rpc('register', {});
  const seeded = await child.rpc('seed-bulk', { userId: bulkUser.userId, ...BULK });
  process.stderr.write(
    `sync-initial: ${s.backend}, demo (${demo.visits} visits) and bulk (${seeded.rows} rows seeded in ${fmt(seeded.ms / 1000)} s), load ${fmt(os.loadavg()[0] ?? 0, 2)}\n`,
  );

  // One warm-up of each path on the demo data (JIT, connection pool, prepared plans).
  await child.rpc('select-scope', { userId: demo.userId, open: true });
  await initialSync(s.syncUrl, demo.token);

  const results: Array<{ set: string; what: string; rows: number; ms: number; bytes: number | null }> = [];
  for (const [set, user, runs] of [
    ['demo', demo, RUNS.demo],
    ['bulk', bulkUser, RUNS.bulk],
  ] as const) {
    process.stderr.write(`  ${set}…\n`);
    const select: number[] = [];
    const open: number[] = [];
    const sync: number[] = [];
    let rows = { select: 0, sync: 0 };
    let bytes = 0;
    for (let i = 0; i < runs; i++) {
      const a = await child.rpc('select-scope', { userId: user.userId, open: false });
      const b = await child.rpc('select-scope', { userId: user.userId, open: true });
      const c = set === 'bulk' && i === runs - 1 ? await profiled(child, `sync-initial-${s.backend}-bulk`, () => initialSync(s.syncUrl, user.token)) : await initialSync(s.syncUrl, user.token);
      select.push(a.ms);
      open.push(b.ms);
      sync.push(c.ms);
      rows = { select: a.rows, sync: c.rows };
      bytes = c.bytes;
    }
    results.push({ set, what: 'select', rows: rows.select, ms: median(select), bytes: null });
    results.push({ set, what: 'select+open', rows: rows.select, ms: median(open), bytes: null });
    results.push({ set, what: 'sync', rows: rows.sync, ms: median(sync), bytes });
  }

  const baseOf = (set: string) => results.find((r) => r.set === set && r.what === 'select')?.ms ?? Number.NaN;
  console.log(
    table(
      ['data set', 'path', 'rows', 'ms (median)', 'rows/s', 'MB sent', 'vs select'],
      results.map((r) => [r.set, r.what, String(r.rows), fmt(r.ms), fmt((r.rows / r.ms) * 1000, 0), r.bytes === null ? '' : fmt(r.bytes / 1e6, 2), ratio(r.ms, baseOf(r.set))]),
    ),
  );
  console.log(
    JSON.stringify({
      bench: 'sync-initial',
      backend: s.backend,
      quick,
      runs: RUNS,
      bulk: BULK,
      ...machine(loadBefore),
      results: results.map((r) => ({
        dataSet: r.set,
        path: r.what,
        rows: r.rows,
        ms: Number(r.ms.toFixed(1)),
        rowsPerSec: Math.round((r.rows / r.ms) * 1000),
        bytesSent: r.bytes,
        ratioToSelect: Number((r.ms / baseOf(r.set)).toFixed(2)),
      })),
    }),
  );
} finally {
  await child.stop();
}
