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
 * Prints per-endpoint counts, error rate, p50/p99, the sync figures, the RSS of the server (and
 * the worker) sampled every RSS_EVERY_SECONDS (default 5) and whether each process life stayed
 * flat (a killed and restarted process is a new life, judged on its own), then one JSON line.
 *
 * The day enqueues jobs: a dictation (POST /ai/process-audio, a short WAV; STT is a local
 * stand-in that answers after STT_MS, default 2000) at the documentation step of every
 * DICTATE_EVERY-th visit (default 2), and a verification mail every MAIL_EVERY-th round
 * (default 8); 0 turns either off. Every write carries an Idempotency-Key.
 *
 * FAULTS=server,worker (either or both): `kill -9` under the load, each while a dictation job
 * is inside its STT call, then a restart with the same environment (same port, data dir,
 * database). `server` kills the API process (on PGlite it runs the jobs too); `worker` kills
 * the separate job worker (`fieldchart worker`), which needs BENCH_DATABASE_URL — with FAULTS on
 * PostgreSQL the server runs no jobs (WORKER_ENABLED=false) and one worker process does. A
 * write then is retried with its key (no answer, 5xx, 409 idempotency_in_progress) for up to
 * WRITE_RETRY_SECONDS (default 150: a dead node's claim is abandoned after 120 s); every 2xx
 * goes into a client-side ledger (support/write-ledger.ts). Sockets reconnect by themselves
 * with their last cursor (support/load-device.ts). Afterwards: every device must have been
 * shown its acknowledged timer events and its dictations completed; the database must hold
 * every acknowledged write exactly once, every job done, none left queued or locked. Prints
 * per fault: time to recover, error rate before (the baseline), during and after it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { openDatabase } from '../server/src/db/database.ts';
import { eventually } from '../test/helpers/eventually.ts';
import { freePort } from '../test/helpers/processes.ts';
import { silentWav } from '../test/helpers/wav.ts';
import { startTimedSttStandIn } from '../test/server/ai/pipeline/stt-stand-in.ts';
import { keyedWrite, type Attempt } from './support/keyed-write.ts';
import { LoadDevice, timerKey } from './support/load-device.ts';
import { LoadNode, type NodeKind } from './support/load-nodes.ts';
import { percentile, setting } from './support/measure.ts';
import { judgeRss, type RssLife, type RssSample } from './support/rss-lives.ts';
import { checkLedger, describeCheck, WriteLedger, type LedgerCheck } from './support/write-ledger.ts';

const CLINICIANS = setting('CLINICIANS', 200, 1, 5000);
const LOAD_SECONDS = setting('LOAD_SECONDS', 180, 5, 3600);
const THINK_MS = setting('THINK_MS', 2000, 0, 60_000);
const RSS_EVERY_SECONDS = setting('RSS_EVERY_SECONDS', 5, 1, 600);
// A process life shorter than this (a restart near the end) has no middle to compare with.
const RSS_MIN_LIFE_SECONDS = setting('RSS_MIN_LIFE_SECONDS', 45, 10, 3600);
/** Set-up requests (registering the clinicians, their patients and visits) in flight at once. */
const SETUP_CONCURRENCY = setting('SETUP_CONCURRENCY', 8, 1, 200);
const DICTATE_EVERY = setting('DICTATE_EVERY', 2, 0, 1000);
const MAIL_EVERY = setting('MAIL_EVERY', 8, 0, 1000);
const STT_MS = setting('STT_MS', 2000, 0, 60_000);
const WRITE_RETRY_SECONDS = setting('WRITE_RETRY_SECONDS', 150, 0, 3600);
const FAULTS = (process.env.FAULTS ?? '')
  .split(',')
  .map((f) => f.trim())
  .filter(Boolean) as NodeKind[];
for (const f of FAULTS) if (f !== 'server' && f !== 'worker') throw new Error(`FAULTS: unknown fault "${f}" (server, worker)`);
if (FAULTS.includes('worker') && !process.env.BENCH_DATABASE_URL) {
  throw new Error('FAULTS=worker needs BENCH_DATABASE_URL: on the embedded database the server runs the jobs itself (FAULTS=server kills both)');
}
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
// The STT service the dictation jobs call: a stand-in that takes STT_MS, as a remote one would.
const { stt, inFlight: inStt } = await startTimedSttStandIn(STT_MS);
// A port chosen beforehand: at LOG_LEVEL=warn the server does not log the one it listens on,
// and a restarted server must come back on the same one.
const port = await freePort();
const origin = `http://127.0.0.1:${port}`;
const separateWorker = FAULTS.length > 0 && databaseUrl !== null;
const nodeEnv = {
  PORT: String(port),
  FIELDCHART_DATA_DIR: dataDir,
  LOG_LEVEL: 'warn',
  RESPONSE_CHECK: 'false',
  // One address stands for 200 devices here: the per-address limits are for the open internet.
  RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '0',
  SIGNIN_FAILURES_PER_ADDRESS: '100000',
  OTP_SENDS_PER_EMAIL_PER_HOUR: '100000',
  OTP_SENDS_PER_ADDRESS_PER_HOUR: '1000000',
  STT_URL: stt.url,
  ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  ...(separateWorker ? { WORKER_ENABLED: 'false' } : {}),
};
const server = new LoadNode('server', nodeEnv, origin);
let worker = null as LoadNode | null;
async function cleanup(): Promise<void> {
  if (server.alive()) await server.stop();
  if (worker?.alive()) await worker.stop();
  await stt.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
  if (adminUrl && databaseName) {
    const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists "${databaseName}" with (force)`);
    await admin.end();
  }
}
await (async () => {
  await server.ready();
  // After the server: two processes creating a fresh data dir's key files at once race
  // (the worker read a half-written JWK set).
  if (separateWorker) {
    worker = new LoadNode('worker', nodeEnv, origin);
    await worker.ready();
  }
})().catch(async (err: unknown) => {
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
/** Every request of the load by the time it ended (answered or not): the fault windows are cut from it. */
const timeline: Array<{ end: number; status: number }> = [];

function tally(label: string, started: number, status: number): void {
  if (!measuring) return;
  let t = tallies.get(label);
  if (!t) tallies.set(label, (t = { times: [], errors: 0, statuses: {} }));
  t.times.push(performance.now() - started);
  t.statuses[status] = (t.statuses[status] ?? 0) + 1;
  if (status < 200 || status >= 300) t.errors++;
  timeline.push({ end: performance.now(), status });
}

const ledger = new WriteLedger();
/**
 * A write: keyed, retried with its key across faults (only when FAULTS are on; a plain day
 * counts a failed write as an error and moves on). Every try is tallied; a 2xx is acknowledged.
 */
function write<T = any>(label: string, method: 'POST' | 'PUT', pathname: string, token: string, body: unknown, form?: () => FormData) {
  return keyedWrite<T>({
    url: origin + API + pathname,
    label,
    method,
    token,
    body,
    ...(form ? { form } : {}),
    retryForMs: FAULTS.length > 0 ? WRITE_RETRY_SECONDS * 1000 : 0,
    onAttempt: (a: Attempt) => tally(label, a.at, a.status),
  });
}

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
  tally(label, started, status);
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
  /** What this clinician's device must have been shown by the end (timerKey, dictation ids). */
  readonly ackedTimers: string[];
  readonly dictations: string[];
  device: LoadDevice | null;
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
  ackedTimers: [],
  dictations: [],
  device: null,
}));

async function schedule(c: Clinician): Promise<void> {
  const patient = c.patients[c.scheduled % c.patients.length] as Clinician['patients'][number];
  // Times spread over the day so the visits sort as a real day does.
  const minutes = 7 * 60 + ((c.scheduled * 37) % (11 * 60));
  const start_time = `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
  c.scheduled++;
  const r = await write<any>('POST /schedule-visit-request-save', 'POST', '/schedule-visit-request-save', c.token, { patient_uuid: patient.uuid, visit_date: today, start_time });
  if (r.acknowledged) {
    c.visits.push({ uuid: r.body.data.uuid as string, step: 0 });
    ledger.visit(r.body.data.uuid as string);
  }
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

// ---- RSS of the processes -----------------------------------------------------------------------

// Each sample names its pid: after a kill -9 the restarted process is another life, judged apart.
function rssOf(node: LoadNode): RssSample | null {
  const pid = node.process.pid;
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const mib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024;
    return { node: node.kind, pid, atSeconds: Math.round((performance.now() - loadStarted) / 1000), mib };
  } catch {
    return null; // between a kill and the restart there is nothing to read
  }
}
const rss: RssSample[] = [];
function sampleRss(): void {
  for (const node of [server, worker]) {
    const s = node ? rssOf(node) : null;
    if (s) rss.push(s);
  }
}

// ---- the day -----------------------------------------------------------------------------------

const sync = { connected: 0, initialFailed: 0, initialMs: [] as number[], changes: 0, frames: 0, deliveryMs: [] as number[], undelivered: 0, closedEarly: 0, reconnects: 0 };
const think = () => new Promise((r) => setTimeout(r, THINK_MS * (0.5 + Math.random())));
const dictationWav = silentWav(64_000);
let visitsDocumented = 0;

async function day(c: Clinician, deadline: number): Promise<void> {
  // Sign in as the app does at the start of a shift (a fresh token).
  const signIn = await call<any>('POST /sign-in', 'POST', '/sign-in', null, { email: c.email, password: c.password });
  if (signIn.status === 200) c.token = signIn.body.data.token as string;

  const started = performance.now();
  let awaitingTimer: number | null = null;
  /** After the first sync: only then is a timer event's change on the socket a live delivery. */
  let live = false;
  const device = new LoadDevice(syncUrl, () => c.token);
  c.device = device;
  device.onChanges = (m) => {
    sync.frames++;
    sync.changes += m.changes.length;
    if (awaitingTimer !== null && m.changes.some((ch) => ch.table === 'timer_events')) {
      sync.deliveryMs.push(performance.now() - awaitingTimer);
      awaitingTimer = null;
    }
  };
  // A first sync that has not finished by the end of the run is a failure of the run (counted),
  // not of the clinician's REST work, which goes on meanwhile.
  void eventually(() => {
    if (!Number.isFinite(device.syncedAt)) throw new Error('not synced yet');
    sync.connected++;
    sync.initialMs.push(device.syncedAt - started);
    live = true;
  }, { timeoutMs: Math.max(1000, deadline - performance.now()), intervalMs: 50 }).catch(() => sync.initialFailed++);

  let round = 0;
  while (performance.now() < deadline) {
    round++;
    await call('GET /get-upcomming-visits', 'GET', '/get-upcomming-visits', c.token);
    await think();
    // The day in order: the first open visit until it is documented, then the next.
    const visit = c.visits[0];
    if (!visit) {
      await schedule(c);
      continue;
    }
    await call('GET /visit-details/{uuid}', 'GET', `/visit-details/${visit.uuid}`, c.token);
    await think();
    const step = STEPS[visit.step] as (typeof STEPS)[number];
    if (awaitingTimer !== null) sync.undelivered++;
    awaitingTimer = live ? performance.now() : null;
    const event_time = new Date().toISOString();
    const timer = await write('POST /visit-timer-events', 'POST', '/visit-timer-events', c.token, {
      schedule_uuid: visit.uuid,
      events: [{ event_type: step, event_time, latitude: 41.925, longitude: -87.652, accuracy: 8 }],
    });
    if (timer.acknowledged) {
      visit.step++;
      ledger.timer({ visit: visit.uuid, type: step, time: event_time });
      c.ackedTimers.push(timerKey(visit.uuid, step, event_time));
    } else {
      awaitingTimer = null;
      // Where this visit stands is unknown (a write given up on): the clinician moves on.
      c.visits.splice(c.visits.indexOf(visit), 1);
      continue;
    }
    await think();
    const recorded_at = new Date().toISOString();
    const miles = 3 + (round % 20);
    const mileage = await write('PUT /visit/{uuid}/mileage', 'PUT', `/visit/${visit.uuid}/mileage`, c.token, { total_miles: miles, recorded_at });
    if (mileage.acknowledged) ledger.setMileage(visit.uuid, miles, recorded_at);
    await think();
    if (step === 'start_documentation' && DICTATE_EVERY > 0 && visitsDocumented++ % DICTATE_EVERY === 0) {
      const form = () => {
        const f = new FormData();
        f.append('schedule_uuid', visit.uuid);
        f.append('discipline', 'PT');
        f.append('encounter_type', 'daily_note');
        f.append('audio', new Blob([new Uint8Array(dictationWav)], { type: 'audio/wav' }), 'dictation.wav');
        return f;
      };
      const up = await write<any>('POST /ai/process-audio', 'POST', '/ai/process-audio', c.token, undefined, form);
      if (up.acknowledged) {
        ledger.dictation(up.body.data.transcription_uuid as string);
        c.dictations.push(up.body.data.transcription_uuid as string);
      }
      await think();
    }
    if (MAIL_EVERY > 0 && round % MAIL_EVERY === 1) {
      const mail = await write('POST /verify-email/send-otp', 'POST', '/verify-email/send-otp', c.token, undefined);
      if (mail.acknowledged) ledger.mail(c.email);
      await think();
    }
    if (visit.step === STEPS.length) {
      const note = await write('POST /patient-referral-end-visit-note', 'POST', '/patient-referral-end-visit-note', c.token, {
        schedule_uuid: visit.uuid,
        subjective: 'Reports less knee pain on stairs.',
        objective: 'Gait steady with cane; ROM 0–110°.',
        assessment: 'Progressing toward goals.',
        plan: 'Continue HEP; next visit Friday.',
        vital_signs: { bp: '128/82', pulse: 72, spo2: 97 },
        signature: TINY_PNG,
      });
      if (note.acknowledged) ledger.note(visit.uuid);
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
  if (!device.connected) sync.closedEarly++;
}

// ---- faults ------------------------------------------------------------------------------------

interface FaultFigures {
  kind: NodeKind;
  atSeconds: number;
  /** The kill, in ms from the start of the load. */
  killedAtMs: number;
  jobsInStt: number;
  exitMs: number;
  readyMs: number;
  /** Kill → the first acknowledged request after it. */
  firstOkMs: number;
  /** Server faults: kill → every device's socket has caught up again (a feed run ended after the restart). */
  devicesResyncedMs: number | null;
  devicesResynced: number | null;
  devices: number;
  /** The jobs locked at the kill (PostgreSQL: read from the queue) and when the last of them was done. */
  lockedJobs: number | null;
  lockedJobsDoneMs: number | null;
}
const faults: FaultFigures[] = [];

/** The job ids locked right now (PostgreSQL only: the embedded database is the server's). */
async function lockedJobIds(): Promise<string[] | null> {
  if (!databaseUrl) return null;
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    const rows = await sql<{ id: string }[]>`select id::text as id from graphile_worker.jobs where locked_at is not null`;
    return rows.map((r) => r.id);
  } finally {
    await sql.end();
  }
}

async function jobsStillThere(ids: string[]): Promise<number> {
  const sql = postgres(databaseUrl as string, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ n: number }[]>`select count(*)::int as n from graphile_worker.jobs where id = any(${ids}::bigint[])`;
    return row?.n ?? 0;
  } finally {
    await sql.end();
  }
}

async function fault(kind: NodeKind, at: number): Promise<void> {
  await new Promise((r) => setTimeout(r, Math.max(0, at - performance.now())));
  // While a job runs: up to 30 s for a dictation to be inside its STT call.
  await eventually(() => {
    if (inStt() === 0) throw new Error('no job in STT');
  }, { timeoutMs: 30_000, intervalMs: 20 }).catch(() => {});
  const node = kind === 'server' ? server : (worker as LoadNode);
  const jobsInStt = inStt();
  const locked = kind === 'worker' || !separateWorker ? await lockedJobIds() : null;
  const killedAt = performance.now();
  process.stderr.write(`fault: kill -9 ${kind} at ${((killedAt - loadStarted) / 1000).toFixed(0)} s (${jobsInStt} job(s) in STT)\n`);
  const timing = await node.killAndRestart();
  const readyAt = killedAt + timing.readyMs;
  const firstOkWait = eventually(() => {
    const e = timeline.find((x) => x.end > readyAt && x.status >= 200 && x.status < 300);
    if (!e) throw new Error('no 2xx yet');
    return e.end - killedAt;
  }, { timeoutMs: 300_000, intervalMs: 100 }).catch(() => Number.NaN);
  const active = () => clinicians.filter((c) => c.device !== null);
  // Only a server's kill drops the sockets; a worker's leaves them be.
  const resyncWait =
    kind === 'server'
      ? eventually(() => {
          const behind = active().filter((c) => !((c.device as LoadDevice).syncedAt > readyAt));
          if (behind.length > 0) throw new Error(`${behind.length} devices not caught up`);
          return performance.now() - killedAt;
        }, { timeoutMs: 300_000, intervalMs: 100 }).catch(() => Number.NaN)
      : Promise.resolve(null);
  const lockedWait =
    locked && locked.length > 0
      ? eventually(async () => {
          if ((await jobsStillThere(locked)) > 0) throw new Error('killed jobs not done');
          return performance.now() - killedAt;
        }, { timeoutMs: 300_000, intervalMs: 250 }).catch(() => Number.NaN)
      : Promise.resolve(null);
  const [firstOk, resynced, lockedJobsDoneMs] = await Promise.all([firstOkWait, resyncWait, lockedWait]);
  faults.push({
    kind,
    atSeconds: Math.round((killedAt - loadStarted) / 1000),
    killedAtMs: killedAt - loadStarted,
    jobsInStt,
    exitMs: Math.round(timing.exitMs),
    readyMs: Math.round(timing.readyMs),
    firstOkMs: Math.round(firstOk),
    devicesResyncedMs: resynced === null ? null : Math.round(resynced),
    devicesResynced: resynced === null ? null : active().filter((c) => (c.device as LoadDevice).syncedAt > readyAt).length,
    devices: active().length,
    lockedJobs: locked ? locked.length : null,
    lockedJobsDoneMs: lockedJobsDoneMs === null ? null : Math.round(lockedJobsDoneMs),
  });
}

measuring = true;
const loadStarted = performance.now();
const deadline = loadStarted + LOAD_SECONDS * 1000;
sampleRss();
const sampler = setInterval(sampleRss, RSS_EVERY_SECONDS * 1000);
// The faults at evenly spaced points of the load (one: the middle; two: a third and two thirds).
const faultRuns = FAULTS.map((kind, i) => fault(kind, loadStarted + ((i + 1) / (FAULTS.length + 1)) * LOAD_SECONDS * 1000));
// The clinicians start over the first few seconds, as a shift does, not in one instant.
const days = clinicians.map((c, i) => new Promise((r) => setTimeout(r, (i / CLINICIANS) * Math.min(10_000, LOAD_SECONDS * 200))).then(() => day(c, deadline)));
const outcomes = await Promise.allSettled(days);
clearInterval(sampler);
sampleRss();
measuring = false;
const loadSeconds = (performance.now() - loadStarted) / 1000;
const faultOutcomes = await Promise.allSettled(faultRuns);
const failedDays = [...outcomes, ...faultOutcomes].filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason));
const serverAlive = server.alive() && (worker?.alive() ?? true);

// ---- afterwards: devices reconciled, the ledger checked in the database --------------------------

let reconcile: { devices: number; reconciled: number; waitedMs: number; missing: string[] } | null = null;
let check: LedgerCheck | null = null;
if (FAULTS.length > 0) {
  const waitStarted = performance.now();
  const missingOf = () => clinicians.flatMap((c) => (c.device ? c.device.missing({ timers: c.ackedTimers, completed: c.dictations }) : []));
  await eventually(() => {
    if (missingOf().length > 0) throw new Error('devices not reconciled');
  }, { timeoutMs: 300_000, intervalMs: 250 }).catch(() => {});
  const missing = missingOf();
  const withDevice = clinicians.filter((c) => c.device);
  reconcile = {
    devices: withDevice.length,
    reconciled: withDevice.filter((c) => (c.device as LoadDevice).missing({ timers: c.ackedTimers, completed: c.dictations }).length === 0).length,
    waitedMs: Math.round(performance.now() - waitStarted),
    missing: missing.slice(0, 5),
  };
  const settled = (c: LedgerCheck) => c.unfinished.length === 0 && c.jobsLeft.length === 0;
  if (databaseUrl) {
    const database = await openDatabase({ kind: 'postgres', url: databaseUrl, poolSize: 2 });
    try {
      check = await eventually(async () => {
        const c = await checkLedger(database.db, ledger);
        if (!settled(c)) throw Object.assign(new Error('jobs not settled'), { check: c });
        return c;
      }, { timeoutMs: 300_000, intervalMs: 500 }).catch(async () => checkLedger(database.db, ledger));
    } finally {
      await database.close();
    }
  } else {
    // One process at a time on the embedded data dir: the server (it runs the jobs) stops for
    // each look, and starts again to finish what is left.
    for (let look = 0; look < 10; look++) {
      await server.stop();
      const database = await openDatabase({ kind: 'pglite', dataDir: path.join(dataDir, 'pgdata') });
      try {
        check = await checkLedger(database.db, ledger);
      } finally {
        await database.close();
      }
      if (settled(check)) break;
      server.restartGracefully();
      await server.ready();
      await new Promise((r) => setTimeout(r, 5000));
    }
  }
}
sync.reconnects = clinicians.reduce((n, c) => n + Math.max(0, (c.device?.connects ?? 1) - 1), 0);
for (const c of clinicians) await c.device?.close();
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

// Flat, per process life: its last third's median RSS within 10 % of its middle third's.
const memory = judgeRss(rss, { minSeconds: RSS_MIN_LIFE_SECONDS });
const lifeLine = (l: RssLife) =>
  `${l.node} pid ${l.pid}, ${l.fromSeconds}–${l.toSeconds} s: ${fmt(l.middleMiB, 0)} → ${fmt(l.lastMiB, 0)} MiB` +
  (l.flat === null ? ` (not judged: under ${RSS_MIN_LIFE_SECONDS} s)` : ` (${fmt(100 * l.growth)} %, ${l.flat ? 'flat' : 'NOT flat'})`);
const deliverySorted = sorted(sync.deliveryMs);
const initialSorted = sorted(sync.initialMs);
console.log(
  `\n${CLINICIANS} clinicians, ${fmt(loadSeconds, 0)} s, think ${THINK_MS} ms: ${total} requests (${fmt(total / loadSeconds)} req/s), error rate ${fmt((100 * errors) / Math.max(1, total), 3)} %` +
    `\nsync: ${sync.connected} sockets synced (${sync.initialFailed} first syncs unfinished at the end), initial sync p50 ${fmt(percentile(initialSorted, 50))} / p99 ${fmt(percentile(initialSorted, 99))} ms; ${sync.changes} changes in ${sync.frames} frames;` +
    ` timer event REST → socket p50 ${fmt(percentile(deliverySorted, 50))} / p99 ${fmt(percentile(deliverySorted, 99))} ms (${sync.deliveryMs.length} timed, ${sync.undelivered} not seen before the next); ${sync.closedEarly} sockets not connected at the end, ${sync.reconnects} reconnections` +
    `\nRSS MiB: ${rss.map((s) => `${s.node} ${s.atSeconds}s ${fmt(s.mib, 0)}`).join(', ')}` +
    `\nRSS per process life, middle third → last third: ${memory.lives.map(lifeLine).join('; ')}: ${memory.flat === null ? 'no life long enough to judge' : memory.flat ? 'flat' : 'NOT flat'}` +
    `\nload average before: ${uptimeBefore}; after: ${os.loadavg().map((n) => n.toFixed(2)).join(', ')}` +
    (failedDays.length ? `\nclinician loops that failed: ${failedDays.length} (${failedDays[0]})` : '') +
    (serverAlive ? '' : '\nTHE SERVER EXITED DURING THE RUN'),
);

// Faults: the error rate before the first kill is the same run's baseline; "during" is from a
// kill until its node is ready again plus 10 s (the retries of writes caught by it land then).
// Requests are placed by when they ended: one cut by a kill ends with it.
const windowOf = (from: number, to: number) => {
  const xs = timeline.filter((e) => e.end >= from && e.end < to);
  const bad = xs.filter((e) => e.status < 200 || e.status >= 300);
  return {
    requests: xs.length,
    errors: bad.length,
    errorRate: bad.length / Math.max(1, xs.length),
    noAnswer: bad.filter((e) => e.status === 0).length,
    /** Retries meeting a claim the killed node left unfinished (409 idempotency_in_progress, for 120 s). */
    inProgress: bad.filter((e) => e.status === 409).length,
  };
};
faults.sort((a, b) => a.killedAtMs - b.killedAtMs);
const faultWindows = faults.map((f, i) => {
  const killedAt = loadStarted + f.killedAtMs;
  const recovered = killedAt + f.readyMs + 10_000;
  const next = faults[i + 1] ? loadStarted + (faults[i + 1] as FaultFigures).killedAtMs : Number.POSITIVE_INFINITY;
  return { ...f, during: windowOf(killedAt, recovered), after: windowOf(recovered, next) };
});
const baseline = windowOf(0, faults[0] ? loadStarted + (faults[0] as FaultFigures).killedAtMs : Number.POSITIVE_INFINITY);
// With faults, what must be clean is the day before the first kill; after one, the ledger decides.
const errorsOutsideFaults = faultWindows.length > 0 ? baseline.errors : errors;
if (FAULTS.length > 0) {
  const pct = (w: ReturnType<typeof windowOf>) =>
    `${fmt(100 * w.errorRate, 2)} % of ${w.requests}${w.errors ? ` (${w.noAnswer} unanswered, ${w.inProgress} × 409 in progress)` : ''}`;
  console.log(`\nfaults (error rate before the first: ${pct(baseline)}):`);
  for (const w of faultWindows) {
    console.log(
      `  kill -9 ${w.kind} at ${w.atSeconds} s (${w.jobsInStt} job(s) in STT${w.lockedJobs !== null ? `, ${w.lockedJobs} job(s) locked` : ''}): gone in ${w.exitMs} ms, ready again after ${fmt(w.readyMs / 1000)} s, ` +
        `first 2xx after ${fmt(w.firstOkMs / 1000)} s` +
        (w.devicesResyncedMs !== null ? `, ${w.devicesResynced}/${w.devices} devices caught up after ${fmt(w.devicesResyncedMs / 1000)} s` : '') +
        (w.lockedJobsDoneMs !== null ? `, the locked jobs done after ${fmt(w.lockedJobsDoneMs / 1000)} s` : '') +
        `; errors during ${pct(w.during)}, after ${pct(w.after)}`,
    );
  }
  if (reconcile) console.log(`devices reconciled: ${reconcile.reconciled}/${reconcile.devices} (waited ${fmt(reconcile.waitedMs / 1000)} s after the load)${reconcile.missing.length ? `; e.g. missing ${reconcile.missing.join(', ')}` : ''}`);
  if (check) {
    console.log(describeCheck(check));
    for (const m of [...check.missing, ...check.duplicated, ...check.unfinished].slice(0, 10)) console.log(`  ${m}`);
  }
}
const ledgerBad = check !== null && (check.missing.length > 0 || check.duplicated.length > 0 || check.unfinished.length > 0 || check.jobsLeft.length > 0);
const unreconciled = reconcile !== null && reconcile.reconciled < reconcile.devices;
if (errorsOutsideFaults > 0 || failedDays.length > 0 || sync.initialFailed > 0 || !serverAlive || ledgerBad || unreconciled) process.exitCode = 1;

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
      reconnects: sync.reconnects,
    },
    rssMiB: rss.map((s) => ({ node: s.node, pid: s.pid, atSeconds: s.atSeconds, mib: Number(s.mib.toFixed(1)) })),
    rssLives: memory.lives.map((l) => ({ ...l, growth: Number.isFinite(l.growth) ? Number(l.growth.toFixed(4)) : null })),
    // The largest growth of a judged life (the one a leak would show in).
    rssGrowthLastThird: Number(Math.max(...memory.lives.filter((l) => l.flat !== null).map((l) => l.growth)).toFixed(4)),
    rssFlat: memory.flat,
    faults: faultWindows,
    errorRateBeforeFaults: FAULTS.length > 0 ? Number(baseline.errorRate.toFixed(5)) : undefined,
    reconcile,
    ledger: check,
    failedLoops: failedDays.length,
    serverAlive,
    node: process.version,
    cpus: os.cpus().length,
    loadAverage: { before: Number(loadBefore.toFixed(2)), after: Number((os.loadavg()[0] ?? 0).toFixed(2)) },
  }),
);
