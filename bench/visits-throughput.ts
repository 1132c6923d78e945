/**
 * Visit reads with the demo data (`fieldchart seed --demo`: ~80 visits of 12 patients, PHI
 * sealed), beside a bare Fastify route in the same run:
 *
 *   bare           GET /ping on a Fastify server with one trivial JSON route
 *   upcoming       GET /api/therapist/v1/get-upcomming-visits (today's and upcoming Visit records,
 *                  names and addresses decrypted, one audit row per request)
 *   visit-details  GET /api/therapist/v1/visit-details/{uuid} of a documented visit (timer events,
 *                  mileage, the decrypted SOAP note and signature, one audit row)
 *
 * Servers run in a child process (support/demo-servers.ts): PGlite by default, PostgreSQL when
 * BENCH_DATABASE_URL is set. Settings: BENCH_DURATION_SECONDS (default 6, 1–30),
 * BENCH_CONNECTIONS (default 10, 1–64). Output: a table, then one JSON line (last on stdout).
 */
import os from 'node:os';
import type { DemoServers } from './support/demo-servers.ts';
import { runBench, setting, startChild, stopChild, type Target } from './support/measure.ts';

const DURATION = setting('BENCH_DURATION_SECONDS', 6, 1, 30);
const CONNECTIONS = setting('BENCH_CONNECTIONS', 10, 1, 64);
const WARMUP_SECONDS = 1;

const loadBefore = os.loadavg()[0] ?? 0;
const { child, ready: s } = await startChild<DemoServers>(new URL('./support/demo-servers.ts', import.meta.url));
try {
  const api = s.apiOrigin + s.apiPrefix;
  const auth = { authorization: `Bearer ${s.token}` };
  process.stderr.write(
    `visits-throughput: ${s.backend}, demo data ${s.visits} visits (${s.todayVisits} today), ${DURATION} s per target after ${WARMUP_SECONDS} s warm-up, ${CONNECTIONS} connections\n`,
  );
  const targets: Target[] = [
    { name: 'bare', what: 'GET /ping (bare Fastify)', opts: { url: `${s.bareUrl}/ping` } },
    { name: 'upcoming', what: `GET ${s.apiPrefix}/get-upcomming-visits`, opts: { url: `${api}/get-upcomming-visits`, headers: auth } },
    { name: 'visit-details', what: `GET ${s.apiPrefix}/visit-details/{uuid}`, opts: { url: `${api}/visit-details/${s.visitUuid}`, headers: auth } },
  ];
  await runBench({
    bench: 'visits-throughput',
    backend: s.backend,
    targets,
    durationSeconds: DURATION,
    warmupSeconds: WARMUP_SECONDS,
    connections: CONNECTIONS,
    loadBefore,
    extra: { demoVisits: s.visits, todayVisits: s.todayVisits },
  });
} finally {
  await stopChild(child);
}
