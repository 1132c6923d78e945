/**
 * Whether the server's event loop stays free while the database works: GET /healthz (no
 * database work) probed at a steady pace on an idle server, then under each load, in one run:
 *
 *   idle        nothing else (measured before and after the loads; the two are pooled)
 *   upcoming    150 req/s of GET /get-upcomming-visits for the demo clinician (autocannon, paced)
 *   sign-in     wrong-password sign-ins as fast as 10 connections go (each: the failure
 *               throttle's statements, the user lookup, argon2 — which runs on libuv's pool)
 *
 * An orchestrator probing /healthz kills a server whose probe stalls; the aim (issue 15) is a
 * /healthz p99 under 50 ms under both loads. The server runs in a child process
 * (support/healthz-servers.ts): PGlite by default, PostgreSQL when BENCH_DATABASE_URL is set.
 * The probe is one keep-alive connection sending the next request PROBE_INTERVAL_MS after
 * the previous one was sent (or at once, when it took longer).
 *
 * Settings: BENCH_DURATION_SECONDS (default 10, 2–60; `--quick` or BENCH_QUICK=1: 4),
 * BENCH_RATE (the upcoming load, default 150 req/s), BENCH_CONNECTIONS (default 10).
 * Output: a table, then one JSON line.
 */
import http from 'node:http';
import os from 'node:os';
import autocannon from 'autocannon';
import type { HealthzServers } from './support/healthz-servers.ts';
import { machine, percentile, setting, startChild, stopChild } from './support/measure.ts';

const quick = process.argv.includes('--quick') || process.env.BENCH_QUICK === '1';
const DURATION = setting('BENCH_DURATION_SECONDS', quick ? 4 : 10, 2, 60);
const RATE = setting('BENCH_RATE', 150, 1, 5000);
const CONNECTIONS = setting('BENCH_CONNECTIONS', 10, 1, 64);
const PROBE_INTERVAL_MS = 20;
const WARMUP_SECONDS = 1;

interface Probe {
  readonly samples: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly failed: number;
}

/** /healthz, one request at a time, every PROBE_INTERVAL_MS, until `stop` resolves. */
async function probe(origin: string, stop: Promise<void>): Promise<Probe> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const times: number[] = [];
  let failed = 0;
  let stopped = false;
  void stop.then(() => (stopped = true));
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const started = performance.now();
      const req = http.get(`${origin}/healthz`, { agent, timeout: 30_000 }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - started) : reject(new Error(`status ${res.statusCode}`))));
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', reject);
    });
  while (!stopped) {
    const started = performance.now();
    try {
      times.push(await once());
    } catch {
      failed++;
    }
    const wait = PROBE_INTERVAL_MS - (performance.now() - started);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  agent.destroy();
  const sorted = Float64Array.from(times).sort();
  return { samples: sorted.length, p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99), maxMs: sorted[sorted.length - 1] ?? Number.NaN, failed };
}

interface Load {
  readonly requests: number;
  readonly reqPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly statuses: Record<string, number>;
}

function runLoad(opts: autocannon.Options): Promise<Load> {
  return new Promise((resolve, reject) => {
    autocannon({ timeout: 30, ...opts }, (err, r) => {
      if (err) return reject(err);
      resolve({
        requests: r.requests.total,
        reqPerSec: r.requests.total / r.duration,
        p50Ms: r.latency.p50,
        p99Ms: r.latency.p99,
        statuses: Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([code, v]) => [code, v.count ?? 0])),
      });
    });
  });
}

const loadBefore = os.loadavg()[0] ?? 0;
const { child, ready: s } = await startChild<HealthzServers>(new URL('./support/healthz-servers.ts', import.meta.url));
try {
  const api = s.origin + s.apiPrefix;
  process.stderr.write(
    `healthz-under-load: ${s.backend}, demo data ${s.visits} visits (upcoming list: ${s.upcoming.today} today, ${s.upcoming.upcoming} upcoming), ${DURATION} s per phase, /healthz every ${PROBE_INTERVAL_MS} ms\n`,
  );
  const loads: Record<string, { what: string; expect: string; opts: autocannon.Options }> = {
    upcoming: {
      what: `GET ${s.apiPrefix}/get-upcomming-visits at ${RATE} req/s`,
      expect: '200',
      opts: { url: `${api}/get-upcomming-visits`, headers: { authorization: `Bearer ${s.token}` }, connections: CONNECTIONS, overallRate: RATE },
    },
    'sign-in': {
      what: `POST ${s.apiPrefix}/sign-in with a wrong password, ${CONNECTIONS} connections`,
      expect: '401',
      opts: {
        url: `${api}/sign-in`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: s.email, password: 'not the password 123' }),
        connections: CONNECTIONS,
      },
    },
  };

  const idleRun = async () => probe(s.origin, new Promise((r) => setTimeout(r, DURATION * 1000)));
  const loadedRun = async (name: string) => {
    const l = loads[name]!;
    process.stderr.write(`  ${name}…\n`);
    await runLoad({ ...l.opts, duration: WARMUP_SECONDS });
    let done!: () => void;
    const stop = new Promise<void>((r) => (done = r));
    const [load, p] = await Promise.all([runLoad({ ...l.opts, duration: DURATION }).finally(() => done()), probe(s.origin, stop)]);
    // Let the server finish what the load left queued before the next phase.
    await new Promise((r) => setTimeout(r, 1000));
    return { name, what: l.what, expect: l.expect, load, probe: p };
  };

  process.stderr.write('  idle…\n');
  const idle1 = await idleRun();
  const loaded = [await loadedRun('upcoming'), await loadedRun('sign-in')];
  process.stderr.write('  idle again…\n');
  const idle2 = await idleRun();
  // The two idle runs pooled: percentiles of their samples are not kept, so the means are.
  const idle: Probe = {
    samples: idle1.samples + idle2.samples,
    p50Ms: (idle1.p50Ms + idle2.p50Ms) / 2,
    p99Ms: (idle1.p99Ms + idle2.p99Ms) / 2,
    maxMs: Math.max(idle1.maxMs, idle2.maxMs),
    failed: idle1.failed + idle2.failed,
  };

  const f = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '—');
  const head = ['phase', 'load req/s', 'load p50/p99 ms', '/healthz p50 ms', '/healthz p99 ms', '/healthz max ms', 'p99 ÷ idle', 'probes'];
  const body = [
    ['idle', '—', '—', f(idle.p50Ms, 2), f(idle.p99Ms, 2), f(idle.maxMs, 1), '1.00×', String(idle.samples)],
    ...loaded.map((r) => [
      r.name,
      f(r.load.reqPerSec),
      `${f(r.load.p50Ms, 0)} / ${f(r.load.p99Ms, 0)}`,
      f(r.probe.p50Ms, 2),
      f(r.probe.p99Ms, 2),
      f(r.probe.maxMs, 1),
      `${f(r.probe.p99Ms / idle.p99Ms, 2)}×`,
      String(r.probe.samples),
    ]),
  ];
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  console.log([line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n'));

  const wrong = loaded.filter((r) => Object.keys(r.load.statuses).some((code) => code !== r.expect) || r.probe.failed > 0);
  if (wrong.length > 0 || idle.failed > 0) {
    process.stderr.write(
      `unexpected answers: ${wrong.map((r) => `${r.name} ${JSON.stringify(r.load.statuses)} (expected ${r.expect}), ${r.probe.failed} failed probes`).join('; ')}${idle.failed ? `; ${idle.failed} failed idle probes` : ''}\n`,
    );
    process.exitCode = 1;
  }
  const r3 = (n: number) => Number(n.toFixed(3));
  console.log(
    JSON.stringify({
      bench: 'healthz-under-load',
      backend: s.backend,
      durationSeconds: DURATION,
      probeIntervalMs: PROBE_INTERVAL_MS,
      ...machine(loadBefore),
      upcoming: s.upcoming,
      idle: { p50Ms: r3(idle.p50Ms), p99Ms: r3(idle.p99Ms), maxMs: r3(idle.maxMs), samples: idle.samples },
      results: loaded.map((r) => ({
        name: r.name,
        target: r.what,
        load: { reqPerSec: r3(r.load.reqPerSec), p50Ms: r.load.p50Ms, p99Ms: r.load.p99Ms, statuses: r.load.statuses },
        healthz: { p50Ms: r3(r.probe.p50Ms), p99Ms: r3(r.probe.p99Ms), maxMs: r3(r.probe.maxMs), samples: r.probe.samples },
        ratio: r3(r.probe.p99Ms / idle.p99Ms),
      })),
    }),
  );
} finally {
  await stopChild(child);
}
