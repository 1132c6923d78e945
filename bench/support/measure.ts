/**
 * Load-measuring helpers for bench scripts: autocannon with every response time kept
 * (sub-millisecond; its own histogram rounds to whole ms), percentiles, a drain between
 * phases, the table, and a child process that hosts the servers under load.
 */
import { fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import autocannon from 'autocannon';

export function setting(name: string, def: number, min: number, max: number): number {
  const raw = process.env[name];
  const n = raw === undefined ? def : Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer from ${min} to ${max}`);
  return n;
}

export interface Target {
  readonly name: string;
  readonly what: string;
  readonly opts: autocannon.Options;
}

export interface Measured {
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
async function run(opts: autocannon.Options, connections: number): Promise<{ result: autocannon.Result; latencies: Float64Array }> {
  let latencies = new Float64Array(1 << 16);
  let n = 0;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon({ connections, timeout: 20, ...opts }, (err, res) => (err ? reject(err) : resolve(res)));
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

export function percentile(sorted: Float64Array, p: number): number {
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

export async function measure(t: Target, o: { durationSeconds: number; warmupSeconds: number; connections: number }): Promise<Measured> {
  await run({ ...t.opts, duration: o.warmupSeconds }, o.connections);
  await drain(t);
  const { result: r, latencies } = await run({ ...t.opts, duration: o.durationSeconds }, o.connections);
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

export type Compared = Measured & { reqRatio: number; p50Ratio: number; p99Ratio: number };

/** Ratios against the first row (the bare route). */
export function compared(measured: readonly Measured[]): Compared[] {
  const base = measured[0] as Measured;
  return measured.map((m) => ({ ...m, reqRatio: m.reqPerSec / base.reqPerSec, p50Ratio: m.p50Ms / base.p50Ms, p99Ratio: m.p99Ms / base.p99Ms }));
}

const fmt = (n: number, digits = 1) => n.toFixed(digits);

export function table(rows: readonly Compared[]): string {
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

export function jsonRows(rows: readonly Compared[]) {
  return rows.map((r) => ({
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
  }));
}

/** Forks `script` (IPC) and resolves with its `{ ready }` message. */
export function startChild<R>(script: URL, timeoutMs = 180_000): Promise<{ child: ChildProcess; ready: R }> {
  // BENCH_CPU_PROF_DIR: the server process writes a V8 CPU profile there when it exits.
  const profileDir = process.env.BENCH_CPU_PROF_DIR;
  const execArgv = ['--import', 'tsx', ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [])];
  const child = fork(script, [], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill();
      reject(new Error(`the servers did not start within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    child.on('message', (m: { ready?: R }) => {
      if (!m.ready) return;
      clearTimeout(timer);
      resolve({ child, ready: m.ready });
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the servers exited before starting (exit ${code})`));
    });
  });
}

export async function stopChild(child: ChildProcess, timeoutMs = 30_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.send('stop');
  const timer = setTimeout(() => child.kill(), timeoutMs);
  await exited;
  clearTimeout(timer);
}

/**
 * Measures the targets in turn (the first is the baseline), prints the table, flags failed
 * requests (exit code 1: the figures are not comparable) and prints the JSON line last.
 */
export async function runBench(opts: {
  bench: string;
  backend: string;
  targets: readonly Target[];
  durationSeconds: number;
  warmupSeconds: number;
  connections: number;
  loadBefore: number;
  extra?: Record<string, unknown>;
}): Promise<void> {
  const measured: Measured[] = [];
  for (const t of opts.targets) {
    process.stderr.write(`  ${t.name}…\n`);
    measured.push(await measure(t, { durationSeconds: opts.durationSeconds, warmupSeconds: opts.warmupSeconds, connections: opts.connections }));
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
      bench: opts.bench,
      backend: opts.backend,
      ...opts.extra,
      durationSeconds: opts.durationSeconds,
      connections: opts.connections,
      ...machine(opts.loadBefore),
      results: jsonRows(rows),
    }),
  );
}


/**
 * What every bench's JSON line carries about the machine. Other work on it skews every figure:
 * the 1-minute load average before and after the run says whether they can be trusted.
 */
export function machine(loadBefore: number) {
  return {
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model ?? null,
    loadAverage: { before: Number(loadBefore.toFixed(2)), after: Number((os.loadavg()[0] ?? 0).toFixed(2)) },
  };
}
