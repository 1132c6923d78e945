/**
 * The device's side of a reconcile: the client library (PGlite device database, AES-GCM
 * device key) has N queued patient creates in flight and the server answers them — how long
 * until the device has recorded every answer (`sync.status.pending` is 0), and its CPU.
 *
 * The server here is the stand-in peer of the client's tests (test/client-lib/protocol-peer.ts),
 * so the figure is the device's alone. Two ways in the same run, alternating A-B-B-A:
 * - `one frame each`: an ack frame per mutation (protocols 1–3), each recorded on its own;
 * - `answers frame`: the window's answers in one frame (protocol 4), its acknowledgements
 *   recorded in one local transaction.
 *
 * --quick (or BENCH_QUICK=1): 200 instead of 1,000. Output: a table, then one JSON line.
 */
import os from 'node:os';
import { ProtocolPeer } from '../test/client-lib/protocol-peer.ts';
import { signedInClient } from '../test/client-lib/support.ts';
import { fmt, machine, quick, ratio, table } from './support/sync-peer.ts';

const N = quick ? 200 : 1_000;

async function until(check: () => boolean, timeoutMs = 300_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** One drain: N creates held by the peer, then answered `gathered` or one frame each. */
async function drain(peer: ProtocolPeer, gathered: boolean): Promise<{ ms: number; cpuMs: number }> {
  const client = await signedInClient(peer.url);
  try {
    await client.sync.whenSynced({ timeoutMs: 60_000 });
    peer.onMutation = () => 'hold';
    const before = peer.held.length;
    for (let i = 0; i < N; i++) await client.patients.create({ first_name: `Drain${i}`, last_name: 'Bench', phone: '+1 312 555 0142' });
    await until(() => peer.held.length - before === N);
    peer.onMutation = () => ({ ack: null });
    const cpu = process.cpuUsage();
    const started = performance.now();
    peer.release(() => ({ ack: null }), gathered);
    await until(() => client.sync.status.pending === 0);
    const ms = performance.now() - started;
    const used = process.cpuUsage(cpu);
    return { ms, cpuMs: (used.user + used.system) / 1000 };
  } finally {
    await client.close();
  }
}

const loadBefore = os.loadavg()[0] ?? 0;
const peer = await ProtocolPeer.start();
// A window as large as the outbox: every mutation is in flight when the answers come.
peer.maxInFlight = N;
const runs: Record<'each' | 'gathered', Array<{ ms: number; cpuMs: number }>> = { each: [], gathered: [] };
for (const gathered of [false, true, true, false]) runs[gathered ? 'gathered' : 'each'].push(await drain(peer, gathered));
await peer.close();

const mean = (xs: Array<{ ms: number; cpuMs: number }>, k: 'ms' | 'cpuMs') => xs.reduce((s, x) => s + x[k], 0) / xs.length;
const each = { ms: mean(runs.each, 'ms'), cpuMs: mean(runs.each, 'cpuMs') };
const gathered = { ms: mean(runs.gathered, 'ms'), cpuMs: mean(runs.gathered, 'cpuMs') };
console.log(
  table(
    ['answers to record', 'one frame each', 'answers frame', 'ratio'],
    [
      [`${N}: ms until none pending`, fmt(each.ms), fmt(gathered.ms), ratio(gathered.ms, each.ms)],
      [`${N}: CPU ms (device and peer)`, fmt(each.cpuMs, 0), fmt(gathered.cpuMs, 0), ratio(gathered.cpuMs, each.cpuMs)],
      ['answers recorded per second', fmt((N / each.ms) * 1000, 0), fmt((N / gathered.ms) * 1000, 0), ratio(each.ms, gathered.ms)],
    ],
  ),
);
console.log(
  JSON.stringify({
    bench: 'client-drain',
    backend: 'pglite (device)',
    quick,
    mutations: N,
    ...machine(loadBefore),
    results: [
      { path: 'one frame each', ms: Number(each.ms.toFixed(1)), cpuMs: Math.round(each.cpuMs) },
      { path: 'answers frame', ms: Number(gathered.ms.toFixed(1)), cpuMs: Math.round(gathered.cpuMs), ratio: Number((gathered.ms / each.ms).toFixed(2)) },
    ],
  }),
);
process.exit(0);
