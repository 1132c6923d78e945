/**
 * Auth throughput: what a request costs on the real server, measured against a bare Fastify
 * route on the same machine in the same run (so the ratios travel between machines better
 * than the absolute numbers do).
 *
 *   bare         GET  /ping on a Fastify server with one trivial JSON route
 *   my-profile   GET  /api/therapist/v1/my-profile with a bearer token (JWT + session lookup + profile read)
 *   sign-in      POST /api/therapist/v1/sign-in (argon2id verification: expect a low rate)
 *
 * Both servers run in a child process (support/bench-servers.ts), the real one exactly as
 * the test suite starts it: PGlite by default, PostgreSQL when BENCH_DATABASE_URL is set (a
 * throwaway database is created from it and dropped afterwards). Everything listens on
 * 127.0.0.1 only. The load comes from autocannon in this process; latencies are taken from
 * its per-response timings (sub-millisecond; its own histogram rounds to whole ms).
 *
 * Settings: BENCH_DURATION_SECONDS (default 6, 1–30), BENCH_CONNECTIONS (default 10, 1–64).
 * Output: a table, then one JSON line (the last line of stdout).
 */
import os from 'node:os';
import type { BenchServers } from './support/bench-servers.ts';
import { compared, jsonRows, measure, setting, startChild, stopChild, table, type Measured, type Target } from './support/measure.ts';

const DURATION = setting('BENCH_DURATION_SECONDS', 6, 1, 30);
const CONNECTIONS = setting('BENCH_CONNECTIONS', 10, 1, 64);
const WARMUP_SECONDS = 1;
const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 30_000;

const loadBefore = os.loadavg()[0] ?? 0;
const { child, ready: servers } = await startChild<BenchServers>(new URL('./support/bench-servers.ts', import.meta.url), START_TIMEOUT_MS);
try {
  const api = servers.apiOrigin + servers.apiPrefix;
  process.stderr.write(
    `auth-throughput: ${servers.backend}, ${DURATION} s per target after ${WARMUP_SECONDS} s warm-up, ${CONNECTIONS} connections\n`,
  );
  const targets: Target[] = [
    { name: 'bare', what: 'GET /ping (bare Fastify)', opts: { url: `${servers.bareUrl}/ping` } },
    {
      name: 'my-profile',
      what: `GET ${servers.apiPrefix}/my-profile`,
      opts: { url: `${api}/my-profile`, headers: { authorization: `Bearer ${servers.token}` } },
    },
    {
      name: 'sign-in',
      what: `POST ${servers.apiPrefix}/sign-in`,
      opts: {
        url: `${api}/sign-in`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: servers.email, password: servers.password }),
      },
    },
  ];
  const measured: Measured[] = [];
  for (const t of targets) {
    process.stderr.write(`  ${t.name}…\n`);
    measured.push(await measure(t, { durationSeconds: DURATION, warmupSeconds: WARMUP_SECONDS, connections: CONNECTIONS }));
  }
  const rows = compared(measured);
  console.log(table(rows));
  const failed = rows.filter((r) => r.non2xx + r.errors + r.timeouts > 0);
  if (failed.length > 0) {
    process.stderr.write(`some requests failed: ${failed.map((r) => `${r.name} ${JSON.stringify(r.statuses)}`).join(', ')} — the figures are not comparable\n`);
    process.exitCode = 1;
  }
  console.log(
    JSON.stringify({
      bench: 'auth-throughput',
      backend: servers.backend,
      durationSeconds: DURATION,
      connections: CONNECTIONS,
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? null,
      // Other work on the machine skews everything here (argon2 most): the 1-minute load
      // average before and after the run says whether the figures can be trusted.
      loadAverage: { before: Number(loadBefore.toFixed(2)), after: Number((os.loadavg()[0] ?? 0).toFixed(2)) },
      results: jsonRows(rows),
    }),
  );
} finally {
  await stopChild(child, STOP_TIMEOUT_MS);
}
