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
import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import autocannon from 'autocannon';
import type { BenchServers } from './support/bench-servers.ts';

function setting(name: string, def: number, min: number, max: number): number {
  const raw = process.env[name];
  const n = raw === undefined ? def : Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer from ${min} to ${max}`);
  return n;
}

const DURATION = setting('BENCH_DURATION_SECONDS', 6, 1, 30);
const CONNECTIONS = setting('BENCH_CONNECTIONS', 10, 1, 64);
const WARMUP_SECONDS = 1;
const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 30_000;

interface Target {
  readonly name: string;
  readonly what: string;
  readonly opts: autocannon.Options;
}

interface Measured {
  readonly name: string;
  readonly what: string;
  readonly requests: number;
  readonly reqPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  /** Response count by status code. */
  readonly statuses: Record<string, number>;
}

/** Runs autocannon and keeps every response time (ms, float). */
async function run(opts: autocannon.Options): Promise<{ result: autocannon.Result; latencies: Float64Array }> {
  let latencies = new Float64Array(1 << 16);
  let n = 0;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({ connections: CONNECTIONS, timeout: 20, ...opts }, (err, res) => (err ? reject(err) : resolve(res)));
    instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
      if (n === latencies.length) {
        const grown = new Float64Array(latencies.length * 2);
        grown.set(latencies);
        latencies = grown;
      }
      latencies[n++] = responseTime;
    });
  });
  return { result, latencies: latencies.slice(0, n).sort() };
}

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
}

/**
 * autocannon drops its connections when the time is up, but the server still finishes what
 * it had started (ten argon2 verifications, say). One more request of the same kind, queued
 * behind them, returns once they are done: the next phase starts on an idle server.
 */
async function drain(t: Target): Promise<void> {
  const res = await fetch(t.opts.url, {
    method: t.opts.method ?? 'GET',
    headers: t.opts.headers as Record<string, string> | undefined,
    ...(typeof t.opts.body === 'string' ? { body: t.opts.body } : {}),
    signal: AbortSignal.timeout(60_000),
  });
  await res.arrayBuffer();
}

async function measure(t: Target): Promise<Measured> {
  await run({ ...t.opts, duration: WARMUP_SECONDS });
  await drain(t);
  const { result: r, latencies } = await run({ ...t.opts, duration: DURATION });
  await drain(t);
  return {
    name: t.name,
    what: t.what,
    requests: r.requests.total,
    reqPerSec: r.requests.total / r.duration,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statuses: Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([code, v]) => [code, v.count ?? 0])),
  };
}

const fmt = (n: number, digits = 1) => n.toFixed(digits);

function table(rows: ReadonlyArray<Measured & { reqRatio: number; p50Ratio: number; p99Ratio: number }>): string {
  const head = ['target', 'req/s', 'p50 ms', 'p99 ms', 'req/s vs bare', 'p50 vs bare', 'p99 vs bare', 'non-2xx'];
  const body = rows.map((r) => [
    r.name,
    fmt(r.reqPerSec),
    fmt(r.p50Ms, 3),
    fmt(r.p99Ms, 3),
    `${fmt(r.reqRatio, 4)}×`,
    `${fmt(r.p50Ratio)}×`,
    `${fmt(r.p99Ratio)}×`,
    String(r.non2xx + r.errors + r.timeouts),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

function startServers(): Promise<{ child: ChildProcess; servers: BenchServers }> {
  const child = fork(new URL('./support/bench-servers.ts', import.meta.url), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`the servers did not start within ${START_TIMEOUT_MS / 1000} s`));
    }, START_TIMEOUT_MS);
    child.on('message', (m: { ready?: BenchServers }) => {
      if (!m.ready) return;
      clearTimeout(timer);
      resolve({ child, servers: m.ready });
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the servers exited before starting (exit ${code})`));
    });
  });
}

async function stopServers(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.send('stop');
  const timer = setTimeout(() => child.kill(), STOP_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
}

const loadBefore = os.loadavg()[0] ?? 0;
const { child, servers } = await startServers();
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
    measured.push(await measure(t));
  }
  const base = measured[0] as Measured;
  const rows = measured.map((m) => ({
    ...m,
    reqRatio: m.reqPerSec / base.reqPerSec,
    p50Ratio: m.p50Ms / base.p50Ms,
    p99Ratio: m.p99Ms / base.p99Ms,
  }));
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
      results: rows.map((r) => ({
        name: r.name,
        target: r.what,
        requests: r.requests,
        reqPerSec: Number(fmt(r.reqPerSec, 2)),
        p50Ms: Number(r.p50Ms.toFixed(3)),
        p99Ms: Number(r.p99Ms.toFixed(3)),
        reqPerSecRatioToBare: Number(r.reqRatio.toFixed(5)),
        p50RatioToBare: Number(r.p50Ratio.toFixed(3)),
        p99RatioToBare: Number(r.p99Ratio.toFixed(3)),
        non2xx: r.non2xx,
        errors: r.errors,
        timeouts: r.timeouts,
        statuses: r.statuses,
      })),
    }),
  );
} finally {
  await stopServers(child);
}
