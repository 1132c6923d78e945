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
import { runBench, setting, startChild, stopChild, type Target } from './support/measure.ts';

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
  await runBench({
    bench: 'auth-throughput',
    backend: servers.backend,
    targets,
    durationSeconds: DURATION,
    warmupSeconds: WARMUP_SECONDS,
    connections: CONNECTIONS,
    loadBefore,
  });
} finally {
  await stopChild(child, STOP_TIMEOUT_MS);
}
