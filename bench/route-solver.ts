/**
 * The route solver (Held–Karp, @fieldchart/schema/routing) on a full day of 12 visits, beside
 * brute force over every order of 9 visits, in the same run on the same kind of instances:
 * random points in a 12 × 12 mile box around Columbus, Ohio, great-circle travel minutes,
 * a home base (start and end). Each brute-force answer is checked against the solver's.
 *
 * Settings: BENCH_ROUTE_RUNS (default 40, 5–500) timed solves per size after 5 warm-up runs,
 * BENCH_BRUTE_RUNS (default 5, 1–50). Output: a table, then one JSON line (last on stdout).
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { bruteForceRoute, greatCircleMatrix, solveRoute, type LatLng, type RouteProblem } from '@fieldchart/schema/routing';
import { setting } from './support/measure.ts';
import { prng } from '../server/src/services/seed/demo-data.ts';

const RUNS = setting('BENCH_ROUTE_RUNS', 40, 5, 500);
const BRUTE_RUNS = setting('BENCH_BRUTE_RUNS', 5, 1, 50);

/** The demo seed's deterministic generator (mulberry32): the same instances every run. */
const rng = prng;

function instance(n: number, seed: number): RouteProblem {
  const r = rng(seed);
  // ~0.17° of latitude and ~0.23° of longitude ≈ 12 miles each way at Columbus.
  const points: LatLng[] = Array.from({ length: n + 1 }, () => ({ lat: 39.88 + r() * 0.17, lng: -83.12 + r() * 0.23 }));
  const { minutes } = greatCircleMatrix(points);
  return {
    cost: minutes.slice(0, n).map((row) => row.slice(0, n)),
    start: minutes[n]!.slice(0, n),
    end: minutes.slice(0, n).map((row) => row[n]!),
  };
}

function time(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { median: at(0.5), p95: at(0.95), max: s[s.length - 1]! };
};

const loadBefore = os.loadavg()[0] ?? 0;
for (let i = 0; i < 5; i++) solveRoute(instance(12, 1000 + i));

const exact12 = Array.from({ length: RUNS }, (_, i) => {
  const p = instance(12, i + 1);
  return time(() => solveRoute(p));
});
const exact9 = Array.from({ length: RUNS }, (_, i) => {
  const p = instance(9, i + 1);
  return time(() => solveRoute(p));
});
let mismatches = 0;
const brute9 = Array.from({ length: BRUTE_RUNS }, (_, i) => {
  const p = instance(9, i + 1);
  let cost = 0;
  const ms = time(() => {
    cost = bruteForceRoute(p).cost;
  });
  if (Math.abs(cost - solveRoute(p).cost) > 1e-9) mismatches++;
  return ms;
});

const e12 = stats(exact12);
const e9 = stats(exact9);
const b9 = stats(brute9);
const fmt = (x: number) => x.toFixed(3).padStart(10);
process.stderr.write(
  [
    `route-solver: ${RUNS} runs per exact size, ${BRUTE_RUNS} brute-force runs; load ${loadBefore.toFixed(2)} on ${os.cpus().length} cores`,
    `${'what'.padEnd(34)}${'median ms'.padStart(10)}${'p95 ms'.padStart(10)}${'max ms'.padStart(10)}`,
    `${'Held–Karp, 12 visits + home'.padEnd(34)}${fmt(e12.median)}${fmt(e12.p95)}${fmt(e12.max)}`,
    `${'Held–Karp, 9 visits + home'.padEnd(34)}${fmt(e9.median)}${fmt(e9.p95)}${fmt(e9.max)}`,
    `${'brute force, 9 visits + home'.padEnd(34)}${fmt(b9.median)}${fmt(b9.p95)}${fmt(b9.max)}`,
    `brute force 9 / Held–Karp 12 (medians): ${(b9.median / e12.median).toFixed(1)}×; brute force 9 / Held–Karp 9: ${(b9.median / e9.median).toFixed(0)}×; optimum mismatches: ${mismatches}`,
    '',
  ].join('\n'),
);
console.log(
  JSON.stringify({
    bench: 'route-solver',
    runs: RUNS,
    bruteRuns: BRUTE_RUNS,
    heldKarp12Ms: e12,
    heldKarp9Ms: e9,
    bruteForce9Ms: b9,
    ratioBrute9ToHeldKarp12: b9.median / e12.median,
    mismatches,
    loadBefore,
  }),
);
if (mismatches > 0 || e12.median >= 50) process.exitCode = 1;
