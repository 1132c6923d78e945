/**
 * Reconcile: a device comes back online with 1k, then 10k queued mutations and drains its
 * outbox over the sync socket with as many unacknowledged as the server's `welcome` allows
 * (`max_in_flight`, from protocol 3; protocol 4 gets a batch's answers gathered in `answers`
 * frames; protocol 5, the client library's and the default here, also sends each refill of the
 * window in `mutations` frames of up to 500; BENCH_RECONCILE_PROTOCOL=4 for one frame per
 * mutation, =3 for one frame per answer, =2 for the 100 of protocols 1–2) — the time
 * from hello (with the cursor it holds) to the last ack, and mutations/s. The live feed pokes
 * that its own writes cause run meanwhile, as they would on a real reconnect.
 *
 * The outbox: for each visit, visit.timer_events start_travel, arrive, start_documentation,
 * complete (one mutation each) and visit.mileage; one patient.create per ten mutations.
 * Visits are seeded fresh for every phase (a clinician of its own, PHI sealed).
 *
 * Beside the time to the last answer, the time to the `synced` that covers the last mutation
 * (`to synced`): the device then holds the server's copy of every row it wrote.
 *
 * Baselines in the same run: the floor — the rows the outbox creates written by one batched
 * INSERT per table in one transaction, each table's rows as one jsonb parameter as the
 * server's own batch writers send them (no rules, no audit: `batched insert`); the same inserts
 * followed by the audit entry each mutation writes under the REST rules, chained in one statement
 * as a set's entries are (`batched insert + audit`: every row a drain must write, none of its
 * reads, rules, ledger or answers); beside them the
 * same INSERTs as drizzle's multi-row VALUES (`batched VALUES`), the floor until stop 33, which
 * spends about a second of server CPU on 10k rows' parameters — and the same
 * writes through the REST endpoints over HTTP keep-alive —
 * `rest×10` with ten connections (each owns a tenth of the visits, so a visit's events stay in
 * order) and, for 1k, `rest×1` one request at a time (an outbox drained over REST).
 *
 * Beside each time, the CPU the server process, (on PostgreSQL) its database backends and the
 * device's side (this process) used during it: less noisy than the time on a shared machine, and where a change's gain shows
 * first. The floor's server CPU includes sealing its patients' PHI before the timed insert.
 *
 * The batched insert and the sync drain run in rounds, alternating (BENCH_RECONCILE_ROUNDS, 3 by
 * default), each round on outboxes of its own: each round's two figures go to stderr, and the table
 * has each path's median round (with that round's CPU). On a shared 2-core machine one run of
 * either moves by ±10%, and the ratio of two single runs by more.
 *
 * --quick (or BENCH_QUICK=1): 200 and 1k; BENCH_RECONCILE_SIZES=1000,10000 names the sizes. BENCH_CPU_PROF=<dir>: a CPU profile of the servers
 * during the largest sync drain's first round. PGlite by default, PostgreSQL with BENCH_DATABASE_URL.
 * Output: a table, then one JSON line (last on stdout).
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import type { MutationName, ServerMessage } from '@fieldchart/schema/sync';
import { setting } from './support/measure.ts';
import { fmt, initialSync, machine, profiled, quick, ratio, startSyncServers, SyncPeer, table, type SyncChild } from './support/sync-peer.ts';

const SIZES = process.env.BENCH_RECONCILE_SIZES
  ? process.env.BENCH_RECONCILE_SIZES.split(',').map(Number)
  : quick
    ? [200, 1_000]
    : [1_000, 10_000];
/** BENCH_RECONCILE_REST=0: leave out the REST baselines (minutes on a loaded machine) while iterating. */
const WITH_REST = process.env.BENCH_RECONCILE_REST !== '0';
/** The protocol the device speaks: 3 and 4 are told their window in `welcome.max_in_flight`, 1 and 2 keep 100. */
const PROTOCOL = Number(process.env.BENCH_RECONCILE_PROTOCOL ?? 5);
const IN_FLIGHT_BEFORE_V3 = 100;
/** Rounds of the batched insert and the sync drain, alternating; the table has each one's median. */
const ROUNDS = setting('BENCH_RECONCILE_ROUNDS', 3, 1, 20);
let inFlight = IN_FLIGHT_BEFORE_V3;
const REST_CONNECTIONS = 10;

interface Mutation {
  readonly name: MutationName;
  readonly args: Record<string, unknown>;
  /** The worker lane for REST: a visit's writes stay in order on one connection. */
  readonly lane: number;
}

/** The outbox of `size` mutations over fresh visits of a fresh clinician. */
async function outbox(child: SyncChild, size: number): Promise<{ token: string; userId: string; mutations: Mutation[] }> {
  const creates = Math.floor(size / 10);
  const nVisits = Math.floor((size - creates) / 5);
  const user = await child.rpc('register', {});
  const { visitIds } = await child.rpc('seed-bulk', { userId: user.userId, patients: 20, visits: nVisits, eventsPerVisit: 0, withEvents: false });
  const perVisit: Mutation[][] = visitIds.map((uuid, i) => {
    const t0 = Date.now() - 3 * 3600_000 + i * 1000;
    const at = (min: number) => new Date(t0 + min * 60_000).toISOString();
    const where = { latitude: 39.96, longitude: -82.99, accuracy: 9 };
    const lane = i % REST_CONNECTIONS;
    const events = (['start_travel', 'arrive', 'start_documentation', 'complete'] as const).map((event_type, k) => ({
      name: 'visit.timer_events' as const,
      args: { schedule_uuid: uuid, events: [{ event_type, event_time: at([0, 15, 60, 75][k] as number), ...where }] },
      lane,
    }));
    return [...events, { name: 'visit.mileage', args: { uuid, mileage: { total_miles: 12.4, travel_miles: 11.2, onsite_miles: 0.4, recorded_at: at(80) } }, lane }];
  });
  const mutations: Mutation[] = [];
  let c = 0;
  for (const [i, visit] of perVisit.entries()) {
    mutations.push(...visit);
    while (c < creates && c * perVisit.length <= i * creates) mutations.push(patientCreate(c++));
  }
  while (c < creates) mutations.push(patientCreate(c++));
  while (mutations.length < size) mutations.push(patientCreate(c++));
  return { token: user.token, userId: user.userId, mutations };
}

function patientCreate(i: number): Mutation {
  return {
    name: 'patient.create',
    args: {
      uuid: randomUUID(),
      referral_uuid: randomUUID(),
      first_name: `Queued${i}`,
      last_name: 'Patient',
      phone: '614-555-0199',
      address: `${i} Offline Rd, Columbus, OH 43215`,
      referral: { discipline: 'PT', diagnosis_codes: ['M17.11'], ordered_frequency: '2w4' },
    },
    lane: i % REST_CONNECTIONS,
  };
}

/** The run whose time is the median of `runs` (the lower middle of an even count), with its own CPU and counts. */
function median(runs: readonly Drained[]): Drained {
  const sorted = [...runs].sort((a, b) => a.ms - b.ms);
  return sorted[Math.floor((sorted.length - 1) / 2)] as Drained;
}

interface Drained {
  readonly ms: number;
  /** CPU of the server process and of its PostgreSQL backends during the phase (ms; null: not measured). */
  readonly serverCpuMs?: number;
  readonly databaseCpuMs?: number | null;
  /** CPU of this process (the device's side of the socket, or the REST client) during the phase. */
  readonly deviceCpuMs?: number;
  readonly acks: number;
  readonly rejects: number;
  readonly firstReject: string | null;
  /**
   * The sync drain: from hello to the `synced` whose acked_through covers the last mutation —
   * the device then holds the server's copy of every row it wrote (what `whenSynced()` waits
   * for) — where `ms` ends at the last answer.
   */
  readonly syncedMs?: number;
}

/** Hello with the device's cursor, then the outbox with at most the welcome's window unacknowledged; resolves on the last reply. */
async function drainOverSync(url: string, token: string, mutations: readonly Mutation[]): Promise<Drained> {
  const first = await initialSync(url, token);
  const peer = await SyncPeer.connect(url);
  try {
    let sent = 0;
    let replied = 0;
    let acks = 0;
    let rejects = 0;
    let firstReject: string | null = null;
    const started = performance.now();
    // Protocol 5 sends a refill of the window as one `mutations` frame (cut at 500, as the
    // client library cuts them), earlier ones a frame per mutation.
    let refill: object[] = [];
    const flush = () => {
      for (let i = 0; i < refill.length; i += 500) peer.send({ type: 'mutations', mutations: refill.slice(i, i + 500) });
      refill = [];
    };
    const sendNext = () => {
      const m = mutations[sent];
      if (!m) return;
      sent++;
      const mutation = { type: 'mutation', mutation_id: sent, name: m.name, args: m.args, client_time: new Date().toISOString() };
      if (PROTOCOL >= 5) refill.push(mutation);
      else peer.send(mutation);
    };
    const done = new Promise<void>((resolve, reject) => {
      const answered = (m: ServerMessage) => {
        if (m.type === 'retry') reject(new Error(`mutation ${m.mutation_id}: retry after ${m.after_ms} ms`));
        if (m.type !== 'ack' && m.type !== 'reject') return false;
        replied++;
        if (m.type === 'ack') acks++;
        else {
          rejects++;
          firstReject ??= `${m.mutation_id}: ${m.status} ${m.code} ${m.message}`;
        }
        if (replied === mutations.length) resolve();
        else sendNext();
        return true;
      };
      // Protocol 4 gathers a batch's answers into `answers` frames.
      peer.on((m) => {
        if (m.type !== 'answers') return answered(m);
        for (const a of m.answers) answered(a);
        flush();
        return true;
      });
    });
    const caughtUp = peer.next('synced', (m) => (m.acked_through ?? 0) >= mutations.length, 180_000).then(() => performance.now() - started);
    // Awaited after the last answer; a drain that fails first must not leave it unhandled.
    caughtUp.catch(() => {});
    const welcome = await peer.hello(token, first.cursor, peer.clientId, PROTOCOL);
    if (welcome.last_mutation_id !== 0) throw new Error(`a fresh device has last_mutation_id ${welcome.last_mutation_id}`);
    inFlight = welcome.max_in_flight ?? IN_FLIGHT_BEFORE_V3;
    for (let i = 0; i < inFlight; i++) sendNext();
    flush();
    await done;
    const ms = performance.now() - started;
    return { ms, syncedMs: await caughtUp, acks, rejects, firstReject };
  } finally {
    peer.close();
  }
}

/** The same writes through REST, `connections` requests at a time, each lane in order. */
async function drainOverRest(api: string, token: string, mutations: readonly Mutation[], connections: number): Promise<Drained> {
  const lanes: Mutation[][] = Array.from({ length: connections }, () => []);
  for (const m of mutations) lanes[m.lane % connections]?.push(m);
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json' };
  let acks = 0;
  let rejects = 0;
  let firstReject: string | null = null;
  const request = (m: Mutation): [string, string, unknown] => {
    switch (m.name) {
      case 'patient.create': {
        const { uuid: _u, referral_uuid: _r, ...body } = m.args;
        return ['POST', '/patient/create', body];
      }
      case 'visit.timer_events':
        return ['POST', '/visit-timer-events', m.args];
      case 'visit.mileage':
        return ['PUT', `/visit/${String(m.args.uuid)}/mileage`, m.args.mileage];
      default:
        throw new Error(`no REST mapping for ${m.name}`);
    }
  };
  const started = performance.now();
  await Promise.all(
    lanes.map(async (lane) => {
      for (const m of lane) {
        const [method, path, body] = request(m);
        const res = await fetch(api + path, { method, headers, body: JSON.stringify(body) });
        const text = await res.text();
        if (res.ok) acks++;
        else {
          rejects++;
          firstReject ??= `${method} ${path}: ${res.status} ${text.slice(0, 200)}`;
        }
      }
    }),
  );
  return { ms: performance.now() - started, acks, rejects, firstReject };
}

/** `fn` with the CPU the server (and its database backends) used meanwhile. */
async function withCpu<T extends Drained>(child: SyncChild, fn: () => Promise<T>): Promise<T> {
  const before = await child.rpc('cpu', {});
  const own = process.cpuUsage();
  const result = await fn();
  const { user, system } = process.cpuUsage(own);
  const after = await child.rpc('cpu', {});
  const databaseCpuMs = before.databaseMs === null || after.databaseMs === null ? null : after.databaseMs - before.databaseMs;
  return { ...result, serverCpuMs: after.serverMs - before.serverMs, databaseCpuMs, deviceCpuMs: (user + system) / 1000 };
}

const loadBefore = os.loadavg()[0] ?? 0;
const child = await startSyncServers();
try {
  const s = child.servers;
  const api = s.apiOrigin + s.apiPrefix;
  process.stderr.write(`sync-reconcile: ${s.backend}, outboxes of ${SIZES.join(' and ')} mutations, protocol ${PROTOCOL}, load ${fmt(os.loadavg()[0] ?? 0, 2)}\n`);

  // Warm-up: every path once, small.
  {
    const w = await outbox(child, 100);
    await drainOverSync(s.syncUrl, w.token, w.mutations);
    if (WITH_REST) {
      const r = await outbox(child, 100);
      await drainOverRest(api, r.token, r.mutations, REST_CONNECTIONS);
    }
  }

  const results: Array<{ size: number; path: string } & Drained> = [];
  for (const size of SIZES) {
    process.stderr.write(`  ${size}…\n`);
    if (WITH_REST) {
      const a = await outbox(child, size);
      results.push({ size, path: `rest×${REST_CONNECTIONS}`, ...(await drainOverRest(api, a.token, a.mutations, REST_CONNECTIONS)) });
    }
    if (WITH_REST && size <= 1_000) {
      const b = await outbox(child, size);
      results.push({ size, path: 'rest×1', ...(await drainOverRest(api, b.token, b.mutations, 1)) });
    }
    // The floor: the same rows written by one batched INSERT per table (no rules, no audit),
    // as the server's batch writers send rows; the same followed by their audit entries; drizzle's
    // VALUES beside them (once), for the record.
    const insertRows = async (via: 'recordset' | 'values' | 'recordset+audit'): Promise<Drained> => {
      const d = await outbox(child, size);
      return withCpu(child, async () => {
        const { ms } = await child.rpc('insert-rows', { userId: d.userId, via, mutations: d.mutations.map(({ name, args }) => ({ name, args })) });
        return { ms, acks: 0, rejects: 0, firstReject: null };
      });
    };
    const floors: Drained[] = [];
    const withAudit: Drained[] = [];
    const drains: Drained[] = [];
    let values: Drained | null = null;
    for (let round = 0; round < ROUNDS; round++) {
      floors.push(await insertRows('recordset'));
      withAudit.push(await insertRows('recordset+audit'));
      values ??= await insertRows('values');
      const c = await outbox(child, size);
      const drain = () => withCpu(child, () => drainOverSync(s.syncUrl, c.token, c.mutations));
      drains.push(size === SIZES.at(-1) && round === 0 ? await profiled(child, `sync-reconcile-${s.backend}-${size}`, drain) : await drain());
      const [floor, audited, synced] = [floors.at(-1) as Drained, withAudit.at(-1) as Drained, drains.at(-1) as Drained];
      process.stderr.write(
        `    round ${round + 1}: batched insert ${fmt(floor.ms, 1)} ms, + audit ${fmt(audited.ms, 1)} ms, sync ${fmt(synced.ms, 1)} ms (${ratio(synced.ms, floor.ms)}; ${ratio(synced.ms, audited.ms)} with audit)\n`,
      );
    }
    results.push(
      { size, path: 'batched insert', ...median(floors) },
      { size, path: 'batched insert + audit', ...median(withAudit) },
      { size, path: 'batched VALUES', ...(values as Drained) },
      { size, path: 'sync', ...median(drains) },
    );
  }

  const msOf = (size: number, path: string) => results.find((r) => r.size === size && r.path === path)?.ms ?? Number.NaN;
  const baseOf = (size: number) => msOf(size, `rest×${REST_CONNECTIONS}`);
  const floorOf = (size: number) => msOf(size, 'batched insert');
  const auditedFloorOf = (size: number) => msOf(size, 'batched insert + audit');
  console.log(
    table(
      ['outbox', 'path', 'ms', 'mutations/s', `time vs rest×${REST_CONNECTIONS}`, 'time vs batched insert', 'vs + audit', 'to synced ms', 'to synced vs batched insert', 'server CPU ms', 'database CPU ms', 'device CPU ms', 'acks', 'rejects'],
      results.map((r) => [
        String(r.size),
        r.path,
        fmt(r.ms),
        fmt((r.size / r.ms) * 1000, 0),
        ratio(r.ms, baseOf(r.size)),
        ratio(r.ms, floorOf(r.size)),
        ratio(r.ms, auditedFloorOf(r.size)),
        r.syncedMs === undefined ? '—' : fmt(r.syncedMs),
        r.syncedMs === undefined ? '—' : ratio(r.syncedMs, floorOf(r.size)),
        r.serverCpuMs === undefined ? '—' : fmt(r.serverCpuMs, 0),
        r.databaseCpuMs == null ? '—' : fmt(r.databaseCpuMs, 0),
        r.deviceCpuMs === undefined ? '—' : fmt(r.deviceCpuMs, 0),
        String(r.acks),
        String(r.rejects),
      ]),
    ),
  );
  const rejected = results.filter((r) => r.rejects > 0);
  if (rejected.length > 0) {
    process.stderr.write(`some writes were refused — the figures are not comparable: ${rejected.map((r) => `${r.path} ${r.firstReject}`).join('; ')}\n`);
    process.exitCode = 1;
  }
  console.log(
    JSON.stringify({
      bench: 'sync-reconcile',
      backend: s.backend,
      quick,
      protocol: PROTOCOL,
      inFlight,
      restConnections: REST_CONNECTIONS,
      ...machine(loadBefore),
      results: results.map((r) => ({
        mutations: r.size,
        path: r.path,
        ms: Number(r.ms.toFixed(1)),
        mutationsPerSec: Math.round((r.size / r.ms) * 1000),
        timeRatioToRest: Number((r.ms / baseOf(r.size)).toFixed(2)),
        timeRatioToBatchedInsert: Number((r.ms / floorOf(r.size)).toFixed(2)),
        timeRatioToBatchedInsertWithAudit: Number((r.ms / auditedFloorOf(r.size)).toFixed(2)),
        syncedMs: r.syncedMs === undefined ? null : Number(r.syncedMs.toFixed(1)),
        syncedRatioToBatchedInsert: r.syncedMs === undefined ? null : Number((r.syncedMs / floorOf(r.size)).toFixed(2)),
        serverCpuMs: r.serverCpuMs === undefined ? null : Math.round(r.serverCpuMs),
        databaseCpuMs: r.databaseCpuMs == null ? null : Math.round(r.databaseCpuMs),
        deviceCpuMs: r.deviceCpuMs === undefined ? null : Math.round(r.deviceCpuMs),
        acks: r.acks,
        rejects: r.rejects,
      })),
    }),
  );
} finally {
  await child.stop();
}
