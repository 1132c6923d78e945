/**
 * The five hot REST endpoints beside a raw floor of the same answers on the same database
 * (support/rest-floor.ts: bare Fastify, postgres.js or PGlite's query API, jose, node:crypto),
 * measured A-B-B-A per endpoint (floor, project, project, floor; each side's two runs
 * averaged, so drift in the machine's load falls on both):
 *
 *   my-profile     GET /my-profile
 *   upcoming       GET /get-upcomming-visits (the demo clinician's today and upcoming visits)
 *   visit-details  GET /visit-details/{uuid} of a completed visit with a signed SOAP note
 *   patient-create POST /patient/create (a new patient and referral per request)
 *   timer-event    POST /visit-timer-events (start_travel on a fresh scheduled visit per request)
 *
 * Statements per request are counted at the driver over BENCH_PROBE sequential requests per
 * side after the load. Servers run in a child process (support/rest-floor-servers.ts):
 * PGlite by default, PostgreSQL when BENCH_DATABASE_URL is set. Settings:
 * BENCH_DURATION_SECONDS (default 5, 1–30), BENCH_CONNECTIONS (default 10, 1–64),
 * BENCH_ONLY (comma-separated endpoint names). Output: a table, then one JSON line.
 */
import os from 'node:os';
import type { ChildProcess } from 'node:child_process';
import type autocannon from 'autocannon';
import type { RestFloorServers, StatementCounts } from './support/rest-floor-servers.ts';
import { machine, measure, setting, startChild, stopChild, type Measured, type Target } from './support/measure.ts';

const DURATION = setting('BENCH_DURATION_SECONDS', 5, 1, 30);
const CONNECTIONS = setting('BENCH_CONNECTIONS', 10, 1, 64);
const PROBE = setting('BENCH_PROBE', 20, 1, 200);
const WARMUP_SECONDS = 1;
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : null;

function countsOf(child: ChildProcess): Promise<StatementCounts> {
  return new Promise((resolve) => {
    const on = (m: { counts?: StatementCounts }) => {
      if (!m.counts) return;
      child.off('message', on);
      resolve(m.counts);
    };
    child.on('message', on);
    child.send('count');
  });
}

interface Endpoint {
  readonly name: string;
  readonly what: string;
  /** The same request against a base URL (floor or project API). */
  target(base: string): Target;
}

const loadBefore = os.loadavg()[0] ?? 0;
const { child, ready: s } = await startChild<RestFloorServers>(new URL('./support/rest-floor-servers.ts', import.meta.url), 300_000);
try {
  const api = s.apiOrigin + s.apiPrefix;
  const headers = { authorization: `Bearer ${s.token}` };
  const json = { ...headers, 'content-type': 'application/json' };
  let nextVisit = 1; // 0 is the drains' visit
  let wrapped = false;
  const timerBody = (visit: string) =>
    JSON.stringify({ schedule_uuid: visit, events: [{ event_type: 'start_travel', event_time: '2020-01-01T13:40:00.000Z', latitude: 40.7, longitude: -74, accuracy: 8 }] });
  const freshTimerBody = () => {
    if (nextVisit >= s.timerVisits.length) {
      nextVisit = 1;
      wrapped = true;
    }
    return timerBody(s.timerVisits[nextVisit++] as string);
  };
  const patientBody = JSON.stringify({
    first_name: 'Maria',
    last_name: 'Lopez-Garcia',
    email: 'maria.lopez@example.test',
    phone: '+1 555 0100',
    address: '12 Elm Street, Springfield',
    referral: { discipline: 'PT', diagnosis_codes: ['M17.11'], referral_source: 'Dr. Adams', start_of_care: '2026-11-01', ordered_frequency: '2w4' },
  });
  const endpoints: Endpoint[] = [
    { name: 'my-profile', what: 'GET /my-profile', target: (b: string) => ({ name: '', what: '', opts: { url: `${b}/my-profile`, headers } }) },
    { name: 'upcoming', what: 'GET /get-upcomming-visits', target: (b: string) => ({ name: '', what: '', opts: { url: `${b}/get-upcomming-visits`, headers } }) },
    { name: 'visit-details', what: 'GET /visit-details/{uuid}', target: (b: string) => ({ name: '', what: '', opts: { url: `${b}/visit-details/${s.visitUuid}`, headers } }) },
    {
      name: 'patient-create',
      what: 'POST /patient/create',
      target: (b: string) => ({ name: '', what: '', opts: { url: `${b}/patient/create`, method: 'POST', headers: json, body: patientBody } }),
    },
    {
      name: 'timer-event',
      what: 'POST /visit-timer-events',
      target: (b: string) => ({
        name: '',
        what: '',
        opts: {
          url: `${b}/visit-timer-events`,
          method: 'POST',
          headers: json,
          body: timerBody(s.timerVisits[0] as string),
          requests: [{ method: 'POST', setupRequest: (req: autocannon.Request) => ({ ...req, body: freshTimerBody() }) }],
        },
      }),
    },
  ].filter((e) => !ONLY || ONLY.has(e.name));

  process.stderr.write(
    `rest-floor: ${s.backend}, demo data (${s.upcoming.today} today, ${s.upcoming.upcoming} upcoming), ${DURATION} s per run after ${WARMUP_SECONDS} s warm-up, ${CONNECTIONS} connections, A-B-B-A\n`,
  );
  const o = { durationSeconds: DURATION, warmupSeconds: WARMUP_SECONDS, connections: CONNECTIONS };
  const mean = (a: Measured, b: Measured): Measured => ({
    ...a,
    requests: a.requests + b.requests,
    reqPerSec: (a.reqPerSec + b.reqPerSec) / 2,
    p50Ms: (a.p50Ms + b.p50Ms) / 2,
    p99Ms: (a.p99Ms + b.p99Ms) / 2,
    non2xx: a.non2xx + b.non2xx,
    errors: a.errors + b.errors,
    timeouts: a.timeouts + b.timeouts,
  });
  async function perRequest(t: Target, side: keyof StatementCounts): Promise<number> {
    const before = await countsOf(child);
    for (let i = 0; i < PROBE; i++) {
      const body = t.opts.requests ? freshTimerBody() : t.opts.body;
      const res = await fetch(t.opts.url, { method: t.opts.method ?? 'GET', headers: t.opts.headers as Record<string, string>, ...(typeof body === 'string' ? { body } : {}) });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`${side} ${t.opts.url} answered ${res.status}: ${text.slice(0, 500)}`);
    }
    const after = await countsOf(child);
    return (after[side] - before[side]) / PROBE;
  }

  // The floor must give the same answer: the reads are compared whole before any load.
  const canonical = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(canonical) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, x]) => [k, canonical(x)])) : v;
  for (const e of endpoints.filter((x) => x.target('').opts.method === undefined)) {
    const [a, b] = await Promise.all([s.floorUrl, api].map(async (base) => (await fetch(e.target(base).opts.url, { headers })).json()));
    if (JSON.stringify(canonical(a)) !== JSON.stringify(canonical(b))) {
      process.stderr.write(`${e.name}: the floor's answer differs from the project's\nfloor:   ${JSON.stringify(canonical(a))}\nproject: ${JSON.stringify(canonical(b))}\n`);
      process.exitCode = 1;
    }
  }

  const rows = [];
  for (const e of endpoints) {
    const floorT = e.target(s.floorUrl);
    const projectT = e.target(api);
    process.stderr.write(`  ${e.name}: floor, project, project, floor…\n`);
    const a1 = await measure(floorT, o);
    const b1 = await measure(projectT, o);
    const b2 = await measure(projectT, o);
    const a2 = await measure(floorT, o);
    const floor = mean(a1, a2);
    const project = mean(b1, b2);
    rows.push({
      name: e.name,
      what: e.what,
      floor,
      project,
      ratio: project.reqPerSec / floor.reqPerSec,
      p99Ratio: project.p99Ms / floor.p99Ms,
      floorStatements: await perRequest(floorT, 'floor'),
      projectStatements: await perRequest(projectT, 'project'),
    });
  }

  const f = (n: number, d = 1) => n.toFixed(d);
  const head = ['endpoint', 'floor req/s', 'project req/s', 'ratio', 'floor p50/p99 ms', 'project p50/p99 ms', 'p99 ÷ floor', 'statements (floor)', 'failed'];
  const body = rows.map((r) => [
    r.name,
    f(r.floor.reqPerSec),
    f(r.project.reqPerSec),
    `${f(r.ratio, 2)}×`,
    `${f(r.floor.p50Ms, 2)} / ${f(r.floor.p99Ms, 2)}`,
    `${f(r.project.p50Ms, 2)} / ${f(r.project.p99Ms, 2)}`,
    `${f(r.p99Ratio, 2)}×`,
    `${f(r.projectStatements, 1)} (${f(r.floorStatements, 1)})`,
    String(r.floor.non2xx + r.floor.errors + r.floor.timeouts + r.project.non2xx + r.project.errors + r.project.timeouts),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  console.log([line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n'));
  const failed = rows.filter((r) => r.floor.non2xx + r.floor.errors + r.floor.timeouts + r.project.non2xx + r.project.errors + r.project.timeouts > 0);
  if (failed.length > 0) {
    process.stderr.write(`some requests failed: ${failed.map((r) => `${r.name} floor ${JSON.stringify(r.floor.statuses)} project ${JSON.stringify(r.project.statuses)}`).join(', ')}\n`);
    process.exitCode = 1;
  }
  if (wrapped) process.stderr.write('timer-event: the fresh visits ran out and wrapped round (later requests were replays); raise BENCH_TIMER_VISITS\n');
  const r3 = (n: number) => Number(n.toFixed(3));
  console.log(
    JSON.stringify({
      bench: 'rest-floor',
      backend: s.backend,
      durationSeconds: DURATION,
      connections: CONNECTIONS,
      ...machine(loadBefore),
      results: rows.map((r) => ({
        endpoint: r.name,
        target: r.what,
        floor: { reqPerSec: r3(r.floor.reqPerSec), p50Ms: r3(r.floor.p50Ms), p99Ms: r3(r.floor.p99Ms), statements: r.floorStatements },
        project: { reqPerSec: r3(r.project.reqPerSec), p50Ms: r3(r.project.p50Ms), p99Ms: r3(r.project.p99Ms), statements: r.projectStatements },
        ratio: r3(r.ratio),
        p99Ratio: r3(r.p99Ratio),
      })),
    }),
  );
} finally {
  await stopChild(child);
}
