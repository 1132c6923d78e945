/**
 * A clinic's day against one node: CLINICIANS (default 200) simulated clinicians, each signing
 * in, opening a sync socket and then, until LOAD_SECONDS (default 180) are up, working through
 * visits as the app does — today's and upcoming visits, a visit's details, its timer events
 * (travel → arrive → documentation → complete), mileage, the SOAP note that completes it, the
 * patient list and a chart — with a think time of THINK_MS (default 2000, uniformly 0.5–1.5×)
 * between steps. A completed visit is replaced by a newly scheduled one, so the day goes on.
 * Each socket counts the changes it receives; a timer event's trip from REST write to the
 * device's socket is timed.
 *
 * The server is a spawned process (`npm start`'s entry) on PGlite in a temp data dir, or with
 * BENCH_DATABASE_URL on a fresh PostgreSQL database made for the run (and dropped after).
 * Prints per-endpoint counts, error rate, p50/p99, the sync figures, the server's RSS sampled
 * every RSS_EVERY_SECONDS (default 10) and whether it stayed flat, then one JSON line.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { eventually } from '../test/helpers/eventually.ts';
import { freePort, spawnServer } from '../test/helpers/processes.ts';
import { percentile, setting } from './support/measure.ts';
import { SyncPeer, type Message } from './support/sync-peer.ts';

const CLINICIANS = setting('CLINICIANS', 200, 1, 5000);
const LOAD_SECONDS = setting('LOAD_SECONDS', 180, 5, 3600);
const THINK_MS = setting('THINK_MS', 2000, 0, 60_000);
const RSS_EVERY_SECONDS = setting('RSS_EVERY_SECONDS', 10, 1, 600);
/** Set-up requests (registering the clinicians, their patients and visits) in flight at once. */
const SETUP_CONCURRENCY = setting('SETUP_CONCURRENCY', 8, 1, 200);
const API = '/api/therapist/v1';
const TINY_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

const loadBefore = os.loadavg()[0] ?? 0;
const uptimeBefore = os.loadavg().map((n) => n.toFixed(2)).join(', ');

// ---- the server ----------------------------------------------------------------------------

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-load-day-'));
const adminUrl = process.env.BENCH_DATABASE_URL;
let databaseName: string | null = null;
let databaseUrl: string | null = null;
if (adminUrl) {
  databaseName = `fc_load_day_${process.pid}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${databaseName}"`);
  await admin.end();
  const u = new URL(adminUrl);
  u.pathname = `/${databaseName}`;
  databaseUrl = u.toString();
}
// A port chosen beforehand: at LOG_LEVEL=warn the server does not log the one it listens on.
const port = await freePort();
const server = spawnServer({
  PORT: String(port),
  FIELDCHART_DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
  RESPONSE_CHECK: 'false',
  // One address stands for 200 devices here: the per-address limits are for the open internet.
  RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '0',
  SIGNIN_FAILURES_PER_ADDRESS: '100000',
  ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
});
async function cleanup(): Promise<void> {
  await server.stop();
  fs.rmSync(dataDir, { recursive: true, force: true });
  if (adminUrl && databaseName) {
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${databaseName}" with (force)`);
    await admin.end();
  }
}
const origin = `http://127.0.0.1:${port}`;
await eventually(
  async () => {
    if (server.child.exitCode !== null) throw Object.assign(new Error(`the server exited: ${server.stderr()}`), { fatal: true });
    const res = await fetch(`${origin}/readyz`);
    if (res.status !== 200) throw new Error(`not ready: ${res.status}`);
  },
  { timeoutMs: 180_000, intervalMs: 250 },
).catch(async (err: unknown) => {
  await cleanup();
  throw err;
});
const syncUrl = `${origin.replace(/^http/, 'ws')}${API}/sync`;

// ---- requests, timed per endpoint ------------------------------------------------------------

interface Tally {
  times: number[];
  errors: number;
  statuses: Record<string, number>;
}
const tallies = new Map<string, Tally>();
let measuring = false;

async function call<T = any>(label: string, method: string, pathname: string, token: string | null, body?: unknown): Promise<{ status: number; body: T }> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const started = performance.now();
  let status = 0;
  let parsed: unknown = null;
  try {
    const res = await fetch(origin + API + pathname, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(60_000),
    });
    status = res.status;
    const text = await res.text();
    parsed = text ? JSON.parse(text) : null;
  } catch {
    status = 0;
  }
  if (measuring) {
    let t = tallies.get(label);
    if (!t) tallies.set(label, (t = { times: [], errors: 0, statuses: {} }));
    t.times.push(performance.now() - started);
    t.statuses[status] = (t.statuses[status] ?? 0) + 1;
    if (status < 200 || status >= 300) t.errors++;
  }
  return { status, body: parsed as T };
}

async function must<T = any>(label: string, method: string, pathname: string, token: string | null, body?: unknown): Promise<T> {
  const res = await call<T>(label, method, pathname, token, body);
  if (res.status !== 200) throw new Error(`set-up ${label} answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body;
}

async function inPool<T>(items: readonly T[], concurrency: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) await fn(items[i] as T, i);
    }),
  );
}

// ---- set-up: the clinicians, each with two patients and three visits today -------------------
// (Through the API, as the app would: 7 requests a clinician, argon2 at registration.)

interface Clinician {
  readonly email: string;
  readonly password: string;
  token: string;
  readonly patients: Array<{ uuid: string; referral_uuid: string }>;
  /** Today's open visits and how far each has got through its timer sequence. */
  readonly visits: Array<{ uuid: string; step: number }>;
  scheduled: number;
}

const today = new Date().toISOString().slice(0, 10);
const STEPS = ['start_travel', 'arrive', 'start_documentation', 'complete'] as const;
const setupStarted = performance.now();
const clinicians: Clinician[] = Array.from({ length: CLINICIANS }, (_, i) => ({
  email: `load.${process.pid}.${i}@example.test`,
  password: `Load-day-${i}-long-enough`,
  token: '',
  patients: [],
  visits: [],
  scheduled: 0,
}));

async function schedule(c: Clinician): Promise<void> {
  const patient = c.patients[c.scheduled % c.patients.length] as Clinician['patients'][number];
  // Times spread over the day so the visits sort as a real day does.
  const minutes = 7 * 60 + ((c.scheduled * 37) % (11 * 60));
  const start_time = `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
  c.scheduled++;
  const r = await call<any>('POST /schedule-visit-request-save', 'POST', '/schedule-visit-request-save', c.token, { patient_uuid: patient.uuid, visit_date: today, start_time });
  if (r.status === 200) c.visits.push({ uuid: r.body.data.uuid as string, step: 0 });
}

await inPool(clinicians, SETUP_CONCURRENCY, async (c, i) => {
  const reg = await must<any>('register', 'POST', '/register', null, {
    first_name: 'Load',
    last_name: `Clinician${i}`,
    email: c.email,
    password: c.password,
    password_confirmation: c.password,
  });
  c.token = reg.data.token as string;
  await must('settings', 'PUT', '/my-settings', c.token, { time_zone: 'UTC' });
  for (let p = 0; p < 2; p++) {
    const created = await must<any>('patient', 'POST', '/patient/create', c.token, { first_name: 'Pat', last_name: `Load${i}x${p}`, address: '1200 W Fullerton Ave, Chicago, IL 60614' });
    c.patients.push(created.data);
  }
  for (let v = 0; v < 3; v++) await schedule(c);
  if (c.visits.length !== 3) throw new Error('set-up: a visit could not be scheduled');
});
const setupSeconds = (performance.now() - setupStarted) / 1000;
process.stderr.write(`set-up: ${CLINICIANS} clinicians, ${CLINICIANS * 2} patients, ${CLINICIANS * 3} visits in ${setupSeconds.toFixed(1)} s\n`);

// ---- RSS of the server process ---------------------------------------------------------------

function rssMiB(): number {
  const status = fs.readFileSync(`/proc/${server.pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
  return kb / 1024;
}
const rss: Array<{ atSeconds: number; mib: number }> = [];

// ---- the day -----------------------------------------------------------------------------------

const sync = { connected: 0, initialFailed: 0, initialMs: [] as number[], changes: 0, frames: 0, deliveryMs: [] as number[], undelivered: 0, closedEarly: 0 };
const think = () => new Promise((r) => setTimeout(r, THINK_MS * (0.5 + Math.random())));

async function day(c: Clinician, deadline: number): Promise<void> {
  // Sign in as the app does at the start of a shift (a fresh token).
  const signIn = await call<any>('POST /sign-in', 'POST', '/sign-in', null, { email: c.email, password: c.password });
  if (signIn.status === 200) c.token = signIn.body.data.token as string;

  const started = performance.now();
  const peer = await SyncPeer.connect(syncUrl);
  let awaitingTimer: number | null = null;
  /** After the first sync: only then is a timer event's change on the socket a live delivery. */
  let live = false;
  peer.on((m: Message) => {
    if (m.type !== 'changes') return false;
    sync.frames++;
    sync.changes += m.changes.length;
    if (awaitingTimer !== null && m.changes.some((ch) => ch.table === 'timer_events')) {
      sync.deliveryMs.push(performance.now() - awaitingTimer);
      awaitingTimer = null;
    }
    return false;
  });
  let closed = false;
  peer.ws.on('close', () => (closed = true));
  // A first sync that has not finished by the end of the run is a failure of the run (counted),
  // not of the clinician's REST work, which goes on meanwhile.
  void (async () => {
    await peer.hello(c.token, null, randomUUID());
    await peer.next('synced', undefined, Math.max(1000, deadline - performance.now()));
    sync.connected++;
    sync.initialMs.push(performance.now() - started);
    live = true;
  })().catch(() => sync.initialFailed++);

  let round = 0;
  while (performance.now() < deadline) {
    round++;
    await call('GET /get-upcomming-visits', 'GET', '/get-upcomming-visits', c.token);
    await think();
    // The day in order: the first open visit until it is documented, then the next.
    const visit = c.visits[0];
    if (!visit) break;
    await call('GET /visit-details/{uuid}', 'GET', `/visit-details/${visit.uuid}`, c.token);
    await think();
    const step = STEPS[visit.step] as (typeof STEPS)[number];
    if (awaitingTimer !== null) sync.undelivered++;
    awaitingTimer = live ? performance.now() : null;
    const timer = await call('POST /visit-timer-events', 'POST', '/visit-timer-events', c.token, {
      schedule_uuid: visit.uuid,
      events: [{ event_type: step, event_time: new Date().toISOString(), latitude: 41.925, longitude: -87.652, accuracy: 8 }],
    });
    if (timer.status === 200) visit.step++;
    else awaitingTimer = null;
    await think();
    await call('PUT /visit/{uuid}/mileage', 'PUT', `/visit/${visit.uuid}/mileage`, c.token, { total_miles: 3 + (round % 20), recorded_at: new Date().toISOString() });
    await think();
    if (visit.step === STEPS.length) {
      await call('POST /patient-referral-end-visit-note', 'POST', '/patient-referral-end-visit-note', c.token, {
        schedule_uuid: visit.uuid,
        subjective: 'Reports less knee pain on stairs.',
        objective: 'Gait steady with cane; ROM 0–110°.',
        assessment: 'Progressing toward goals.',
        plan: 'Continue HEP; next visit Friday.',
        vital_signs: { bp: '128/82', pulse: 72, spo2: 97 },
        signature: TINY_PNG,
      });
      c.visits.splice(c.visits.indexOf(visit), 1);
      await schedule(c);
      await think();
    }
    if (round % 2 === 0) {
      await call('GET /patient/my-patients', 'GET', '/patient/my-patients', c.token);
      await think();
      const patient = c.patients[round % c.patients.length] as Clinician['patients'][number];
      await call('GET /patient/chart-details/{uuid}', 'GET', `/patient/chart-details/${patient.referral_uuid}`, c.token);
      await think();
    }
  }
  if (closed) sync.closedEarly++;
  peer.close();
}

measuring = true;
const loadStarted = performance.now();
const deadline = loadStarted + LOAD_SECONDS * 1000;
rss.push({ atSeconds: 0, mib: rssMiB() });
const sampler = setInterval(() => rss.push({ atSeconds: Math.round((performance.now() - loadStarted) / 1000), mib: rssMiB() }), RSS_EVERY_SECONDS * 1000);
// The clinicians start over the first few seconds, as a shift does, not in one instant.
const days = clinicians.map((c, i) => new Promise((r) => setTimeout(r, (i / CLINICIANS) * Math.min(10_000, LOAD_SECONDS * 200))).then(() => day(c, deadline)));
const outcomes = await Promise.allSettled(days);
clearInterval(sampler);
rss.push({ atSeconds: Math.round((performance.now() - loadStarted) / 1000), mib: rssMiB() });
measuring = false;
const loadSeconds = (performance.now() - loadStarted) / 1000;
const failedDays = outcomes.filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason));
const serverAlive = server.child.exitCode === null;
await cleanup();

// ---- report ------------------------------------------------------------------------------------

const fmt = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '—');
const sorted = (xs: number[]) => Float64Array.from(xs).sort();
const rows = [...tallies.entries()]
  .sort(([a], [b]) => a.localeCompare(b))
  .map(([endpoint, t]) => {
    const s = sorted(t.times);
    return { endpoint, requests: t.times.length, errors: t.errors, errorRate: t.errors / t.times.length, p50Ms: percentile(s, 50), p99Ms: percentile(s, 99), statuses: t.statuses };
  });
const total = rows.reduce((n, r) => n + r.requests, 0);
const errors = rows.reduce((n, r) => n + r.errors, 0);
const all = sorted([...tallies.values()].flatMap((t) => t.times));

const head = ['endpoint', 'requests', 'errors', 'p50 ms', 'p99 ms'];
const body = [
  ...rows.map((r) => [r.endpoint, String(r.requests), String(r.errors), fmt(r.p50Ms), fmt(r.p99Ms)]),
  ['all', String(total), String(errors), fmt(percentile(all, 50)), fmt(percentile(all, 99))],
];
const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? '').length)));
const line = (cells: string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
console.log([line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n'));

// Flat: after the first third (warm-up: caches, JIT, pools), the last third's median RSS is
// within 10 % of the middle third's.
const third = (k: number) => {
  const xs = rss.filter((s) => s.atSeconds >= (k * loadSeconds) / 3 && s.atSeconds <= ((k + 1) * loadSeconds) / 3).map((s) => s.mib);
  return percentile(sorted(xs), 50);
};
const rssGrowth = third(2) / third(1) - 1;
const rssFlat = Number.isFinite(rssGrowth) && Math.abs(rssGrowth) <= 0.1;
const deliverySorted = sorted(sync.deliveryMs);
const initialSorted = sorted(sync.initialMs);
console.log(
  `\n${CLINICIANS} clinicians, ${fmt(loadSeconds, 0)} s, think ${THINK_MS} ms: ${total} requests (${fmt(total / loadSeconds)} req/s), error rate ${fmt((100 * errors) / Math.max(1, total), 3)} %` +
    `\nsync: ${sync.connected} sockets synced (${sync.initialFailed} first syncs unfinished at the end), initial sync p50 ${fmt(percentile(initialSorted, 50))} / p99 ${fmt(percentile(initialSorted, 99))} ms; ${sync.changes} changes in ${sync.frames} frames;` +
    ` timer event REST → socket p50 ${fmt(percentile(deliverySorted, 50))} / p99 ${fmt(percentile(deliverySorted, 99))} ms (${sync.deliveryMs.length} timed, ${sync.undelivered} not seen before the next); ${sync.closedEarly} sockets closed early` +
    `\nserver RSS MiB: ${rss.map((s) => `${s.atSeconds}s ${fmt(s.mib, 0)}`).join(', ')}` +
    `\nRSS middle third → last third: ${fmt(third(1), 0)} → ${fmt(third(2), 0)} MiB (${fmt(100 * rssGrowth)} %): ${rssFlat ? 'flat' : 'NOT flat'}` +
    `\nload average before: ${uptimeBefore}; after: ${os.loadavg().map((n) => n.toFixed(2)).join(', ')}` +
    (failedDays.length ? `\nclinician loops that failed: ${failedDays.length} (${failedDays[0]})` : '') +
    (serverAlive ? '' : '\nTHE SERVER EXITED DURING THE RUN'),
);
if (errors > 0 || failedDays.length > 0 || sync.initialFailed > 0 || !serverAlive) process.exitCode = 1;

console.log(
  JSON.stringify({
    bench: 'load-day',
    backend: adminUrl ? 'postgres' : 'pglite',
    clinicians: CLINICIANS,
    durationSeconds: Number(loadSeconds.toFixed(1)),
    thinkMs: THINK_MS,
    setupSeconds: Number(setupSeconds.toFixed(1)),
    requests: total,
    reqPerSec: Number((total / loadSeconds).toFixed(2)),
    errorRate: Number((errors / Math.max(1, total)).toFixed(5)),
    p50Ms: Number(percentile(all, 50).toFixed(1)),
    p99Ms: Number(percentile(all, 99).toFixed(1)),
    endpoints: rows.map((r) => ({ ...r, errorRate: Number(r.errorRate.toFixed(5)), p50Ms: Number(r.p50Ms.toFixed(1)), p99Ms: Number(r.p99Ms.toFixed(1)) })),
    sync: {
      sockets: sync.connected,
      initialUnfinished: sync.initialFailed,
      initialP50Ms: Number(fmt(percentile(initialSorted, 50))),
      initialP99Ms: Number(fmt(percentile(initialSorted, 99))),
      changes: sync.changes,
      frames: sync.frames,
      timerDeliveryP50Ms: Number(fmt(percentile(deliverySorted, 50))),
      timerDeliveryP99Ms: Number(fmt(percentile(deliverySorted, 99))),
      closedEarly: sync.closedEarly,
    },
    rssMiB: rss.map((s) => ({ atSeconds: s.atSeconds, mib: Number(s.mib.toFixed(1)) })),
    rssGrowthLastThird: Number(rssGrowth.toFixed(4)),
    rssFlat,
    failedLoops: failedDays.length,
    serverAlive,
    node: process.version,
    cpus: os.cpus().length,
    loadAverage: { before: Number(loadBefore.toFixed(2)), after: Number((os.loadavg()[0] ?? 0).toFixed(2)) },
  }),
);
