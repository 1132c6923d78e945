/**
 * Change propagation: a write through REST (PUT /visit/{uuid}/mileage, a newer recorded_at
 * each time) → the `changes` message carrying it arriving at a connected, synced device's
 * socket; one write at a time, p50/p99. Beside it, in the same run on the same database:
 *
 *   notify      the raw LISTEN/NOTIFY round trip: pg_notify in a transaction → the listener
 *               has it (in the servers' process, on the server's own connection pool and
 *               listener; PGlite: its in-process LISTEN) — the baseline
 *   rest        the REST write alone: request → response
 *   propagate   request → the device has the `changes` message (trigger's pg_notify on commit
 *               → hub → feed query from the socket's cursor → frame)
 *   after-response  the REST response → the `changes` frame (what propagation adds to the write)
 *
 * and, timed inside the servers' process on one clock (support/sync-servers.ts, write-to-device):
 *
 *   floor           what any design must spend: a raw NOTIFY round trip (pg_notify in a
 *                   transaction → the LISTEN callback) + one primary-key read of the changed
 *                   row + one websocket send of it to a client (parsed) — the aim's baseline
 *   write→device    a transaction updating that row (its trigger pokes the owner) → the
 *                   owner's device has the `changes` message (aim: ≤ 1.5× floor at p50, ≤ 2× at p99)
 *   floor tx, write tx   each side's own transaction until its COMMIT is answered. The floor's
 *                   writes no row, so PostgreSQL commits it without waiting for the WAL to reach
 *                   the disk; the write's commit waits for that flush, as every durable write must
 *   after commit    each latency less its own transaction: the propagation machinery alone
 *   least           each write's transaction plus the floor's after-commit part of the same
 *                   round: what a design whose propagation cost no more than the floor's would
 *                   show — the write's durable commit is in the aim's numerator, not its floor
 *
 * Throughout, IDLE_DEVICES devices of other clinicians are connected and synced on the node:
 * a poke for one user must cost the others nothing.
 *
 * --quick (or BENCH_QUICK=1): 50 writes instead of 300. BENCH_CPU_PROF=<dir>: a CPU profile of
 * the servers during the writes. PGlite by default, PostgreSQL with BENCH_DATABASE_URL.
 * BENCH_PROPAGATION_HISTORY=<visits>: the writing clinician's window holds that many visits,
 * each with its four timer events (default: 20 visits without events).
 * Output: a table, then one JSON line (last on stdout).
 */
import os from 'node:os';
import { fmt, initialSync, latencies, latencyJson, machine, profiled, quick, ratio, startSyncServers, SyncPeer, table, type Latencies } from './support/sync-peer.ts';

const WRITES = quick ? 50 : 300;
const WARMUP = 20;
const IDLE_DEVICES = 100;
/** Clinicians the idle devices belong to (a user holds at most 10 sockets on a node). */
const IDLE_CLINICIANS = 20;
/** The writer's history in the window: a diff's cost may grow with it. */
const HISTORY_VISITS = Number(process.env.BENCH_PROPAGATION_HISTORY ?? 0);

const loadBefore = os.loadavg()[0] ?? 0;
const child = await startSyncServers();
try {
  const s = child.servers;
  const api = s.apiOrigin + s.apiPrefix;
  process.stderr.write(`sync-propagation: ${s.backend}, ${WRITES} writes one at a time after ${WARMUP} warm-up, writer's window ${HISTORY_VISITS > 0 ? `${HISTORY_VISITS} visits with 4 events each` : '20 visits'}, load ${fmt(os.loadavg()[0] ?? 0, 2)}\n`);
  const user = await child.rpc('register', {});
  const { visitIds } = await child.rpc(
    'seed-bulk',
    HISTORY_VISITS > 0
      ? { userId: user.userId, patients: 5, visits: HISTORY_VISITS, eventsPerVisit: 4, withEvents: true }
      : { userId: user.userId, patients: 5, visits: 20, eventsPerVisit: 0, withEvents: false },
  );
  const visit = visitIds[0] as string;

  process.stderr.write(`  ${IDLE_DEVICES} idle devices of ${IDLE_CLINICIANS} other clinicians…\n`);
  const idle: SyncPeer[] = [];
  for (let c = 0; c < IDLE_CLINICIANS; c++) {
    const other = await child.rpc('register', {});
    for (let d = 0; d < IDLE_DEVICES / IDLE_CLINICIANS; d++) {
      const p = await SyncPeer.connect(s.syncUrl);
      const synced = p.next('synced');
      await p.hello(other.token);
      await synced;
      idle.push(p);
    }
  }
  const idleFramesBefore = idle.reduce((n, p) => n + p.framesReceived, 0);

  process.stderr.write('  notify…\n');
  const notify = latencies((await child.rpc('notify-rtt', { count: WRITES, warmup: WARMUP })).latenciesMs);

  process.stderr.write('  propagate…\n');
  const { cursor } = await initialSync(s.syncUrl, user.token);
  const peer = await SyncPeer.connect(s.syncUrl);
  const rest: number[] = [];
  const propagate: number[] = [];
  const afterResponse: number[] = [];
  let unrelated = 0;
  try {
    // The device reconnects with its cursor: an empty feed, then it is live.
    const first = peer.next('synced');
    await peer.hello(user.token, cursor);
    await first;
    const headers = { authorization: `Bearer ${user.token}`, 'content-type': 'application/json', accept: 'application/json' };
    const base = Date.now() - 3600_000;
    await profiled(child, `sync-propagation-${s.backend}`, async () => {
      for (let i = 0; i < WARMUP + WRITES; i++) {
        const recordedAt = new Date(base + i * 1000).toISOString();
        // The changes frame that carries this write, then the synced behind it (the device is current again).
        let delivered = 0;
        let off = () => {};
        const synced = new Promise<void>((resolve) => {
          off = peer.on((m) => {
            if (!delivered && m.type === 'changes' && m.changes.some((c) => c.table === 'visit_mileage' && c.op === 'upsert' && c.row?.recorded_at === recordedAt)) {
              delivered = performance.now();
              return true;
            }
            if (delivered && m.type === 'synced') {
              resolve();
              return true;
            }
            return false;
          });
        });
        const started = performance.now();
        const res = await fetch(`${api}/visit/${visit}/mileage`, { method: 'PUT', headers, body: JSON.stringify({ total_miles: 10 + (i % 50), recorded_at: recordedAt }) });
        await res.arrayBuffer();
        if (!res.ok) throw new Error(`mileage write failed: ${res.status}`);
        const responded = performance.now();
        const timeout = setTimeout(() => process.stderr.write(`  write ${i}: no changes after 10 s\n`), 10_000);
        await synced;
        clearTimeout(timeout);
        off();
        if (i >= WARMUP) {
          rest.push(responded - started);
          propagate.push(delivered - started);
          afterResponse.push(delivered - responded);
        }
      }
    });
    unrelated = peer.framesReceived;
  } finally {
    peer.close();
  }

  process.stderr.write('  floor and write → device…\n');
  const direct = await profiled(child, `sync-write-to-device-${s.backend}`, () =>
    child.rpc('write-to-device', { userId: user.userId, token: user.token, visitId: visitIds[1] as string, count: WRITES, warmup: WARMUP }),
  );
  const floor = latencies(direct.floorMs);
  const write = latencies(direct.writeMs);
  const floorTx = latencies(direct.floorTxMs);
  const writeTx = latencies(direct.writeTxMs);
  const minus = (total: number[], part: number[]) => total.map((t, i) => t - (part[i] as number));
  const floorAfter = latencies(minus(direct.floorMs, direct.floorTxMs));
  const writeAfter = latencies(minus(direct.writeMs, direct.writeTxMs));
  // What a design would show whose propagation cost no more than the floor's after its commit:
  // each write's own durable transaction plus the floor's commit → client of the same round.
  const least = latencies(direct.writeTxMs.map((tx, i) => tx + (direct.floorMs[i] as number) - (direct.floorTxMs[i] as number)));
  const idleFrames = idle.reduce((n, p) => n + p.framesReceived, 0) - idleFramesBefore;
  for (const p of idle) p.close();

  const rows: Array<[string, string, Latencies]> = [
    ['notify', 'pg_notify in a tx → LISTEN callback', notify],
    ['rest', 'PUT mileage → response', latencies(rest)],
    ['propagate', 'PUT mileage → changes at the device', latencies(propagate)],
    ['after-response', 'REST response → changes at the device', latencies(afterResponse)],
    ['floor', 'NOTIFY round trip + PK read + ws send', floor],
    ['write→device', 'UPDATE in a tx → changes at the device', write],
    ['floor tx', "the floor's pg_notify tx (no WAL flush)", floorTx],
    ['write tx', "the write's UPDATE tx (durable commit)", writeTx],
    ['floor after', 'floor less its tx: commit → client', floorAfter],
    ['write after', 'write→device less its tx: commit → device', writeAfter],
    ['least', 'write tx + floor after: no design does less', least],
  ];
  console.log(
    table(
      ['path', 'what', 'n', 'p50 ms', 'p99 ms', 'mean ms', 'p50 vs notify', 'p99 vs notify'],
      rows.map(([name, what, l]) => [name, what, String(l.n), fmt(l.p50, 2), fmt(l.p99, 2), fmt(l.mean, 2), ratio(l.p50, notify.p50), ratio(l.p99, notify.p99)]),
    ),
  );
  console.log(
    `\nwrite→device vs floor: p50 ${fmt(write.p50, 2)} / ${fmt(floor.p50, 2)} ms = ${ratio(write.p50, floor.p50)} (aim ≤ 1.5×), ` +
      `p99 ${fmt(write.p99, 2)} / ${fmt(floor.p99, 2)} ms = ${ratio(write.p99, floor.p99)} (aim ≤ 2×); ` +
      `${IDLE_DEVICES} idle devices of other clinicians received ${idleFrames} frames meanwhile\n` +
      `after each side's commit: p50 ${fmt(writeAfter.p50, 2)} / ${fmt(floorAfter.p50, 2)} ms = ${ratio(writeAfter.p50, floorAfter.p50)}; ` +
      `the write's own transaction ${fmt(writeTx.p50, 2)} ms against the floor's ${fmt(floorTx.p50, 2)} ms (p50)\n` +
      `the least any design could show (the write's transaction + the floor's after): p50 ${fmt(least.p50, 2)} ms = ${ratio(least.p50, floor.p50)} of the floor, ` +
      `p99 ${fmt(least.p99, 2)} ms = ${ratio(least.p99, floor.p99)}\n`,
  );
  console.log(
    JSON.stringify({
      bench: 'sync-propagation',
      backend: s.backend,
      quick,
      writes: WRITES,
      framesAtDevice: unrelated,
      idleDevices: IDLE_DEVICES,
      historyVisits: HISTORY_VISITS,
      framesAtIdleDevices: idleFrames,
      writeToDeviceVsFloor: { p50: Number((write.p50 / floor.p50).toFixed(2)), p99: Number((write.p99 / floor.p99).toFixed(2)) },
      leastVsFloor: { p50: Number((least.p50 / floor.p50).toFixed(2)), p99: Number((least.p99 / floor.p99).toFixed(2)) },
      afterCommitVsFloor: { p50: Number((writeAfter.p50 / floorAfter.p50).toFixed(2)), p99: Number((writeAfter.p99 / floorAfter.p99).toFixed(2)) },
      ...machine(loadBefore),
      results: rows.map(([name, what, l]) => ({
        path: name,
        what,
        ...latencyJson(l),
        p50RatioToNotify: Number((l.p50 / notify.p50).toFixed(2)),
        p99RatioToNotify: Number((l.p99 / notify.p99).toFixed(2)),
      })),
    }),
  );
} finally {
  await child.stop();
}
