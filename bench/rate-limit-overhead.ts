/**
 * What the REST rate limiter costs: GET /my-profile on a server with the limits on (raised
 * out of reach: each request is counted in the node's tally, which is flushed to the table
 * every 250 ms; none is refused) against the same request on a server with them off, in the
 * same run, after the bare Fastify route; each twice, interleaved.
 *
 * PGlite by default, PostgreSQL when BENCH_DATABASE_URL is set. Settings:
 * BENCH_DURATION_SECONDS (default 6, 1–30), BENCH_CONNECTIONS (default 10, 1–64).
 * Output: a table, then one JSON line (the last line of stdout).
 */
import os from 'node:os';
import type { RateLimitServers } from './support/rate-limit-servers.ts';
import { runBench, setting, startChild, stopChild, type Target } from './support/measure.ts';

const DURATION = setting('BENCH_DURATION_SECONDS', 6, 1, 30);
const CONNECTIONS = setting('BENCH_CONNECTIONS', 10, 1, 64);

const loadBefore = os.loadavg()[0] ?? 0;
const { child, ready: s } = await startChild<RateLimitServers>(new URL('./support/rate-limit-servers.ts', import.meta.url), 120_000);
try {
  process.stderr.write(`rate-limit-overhead: ${s.backend}, ${DURATION} s per target, ${CONNECTIONS} connections\n`);
  const profile = (server: { origin: string; token: string }) => ({
    url: `${server.origin}${s.apiPrefix}/my-profile`,
    headers: { authorization: `Bearer ${server.token}` },
  });
  const targets: Target[] = [
    { name: 'bare', what: 'GET /ping (bare Fastify)', opts: { url: `${s.bareUrl}/ping` } },
    // Twice each, interleaved: on a loaded machine the spread between the two runs of one
    // target says how far apart the figures must be to mean anything.
    ...[1, 2].flatMap((round) => [
      { name: `my-profile-no-limit-${round}`, what: `GET ${s.apiPrefix}/my-profile, rate limits off`, opts: profile(s.unlimited) },
      { name: `my-profile-limited-${round}`, what: `GET ${s.apiPrefix}/my-profile, rate limits on`, opts: profile(s.limited) },
    ]),
  ];
  await runBench({
    bench: 'rate-limit-overhead',
    backend: s.backend,
    targets,
    durationSeconds: DURATION,
    warmupSeconds: 1,
    connections: CONNECTIONS,
    loadBefore,
  });
} finally {
  await stopChild(child, 30_000);
}
