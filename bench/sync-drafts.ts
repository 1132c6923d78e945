/**
 * Draft fan-out: N devices (default 10, the per-user socket limit) have the same visit draft
 * open; one types (one character per y-protocols update message, the next keystroke once
 * every other device has the last one) — the latency from the typist's send to each other
 * device receiving the update, p50/p99 over all (keystroke, device) pairs. Beside it, in the
 * same run and process layout, Hocuspocus (@hocuspocus/server) with raw y-protocols clients
 * on the same workload:
 *
 *   hocuspocus          in memory: applies and broadcasts, persists nothing (lighter than ours)
 *   hocuspocus+db       @hocuspocus/extension-database, debounce 0: the whole document state
 *                       sealed and upserted into the same database after every update — but
 *                       after the broadcast, off the latency path
 *   fieldchart          our sync socket: each update validated, sealed and appended to
 *                       draft_updates (committed, with pg_notify) before it is applied and
 *                       fanned out; compaction past 200 stored updates
 *
 * Settings: BENCH_DRAFT_DEVICES (default 10, 2–10). --quick (or BENCH_QUICK=1): 60 keystrokes
 * instead of 300. BENCH_CPU_PROF=<dir>: a CPU profile of the servers during our run.
 * PGlite by default, PostgreSQL with BENCH_DATABASE_URL. Output: a table, then one JSON line.
 */
import os from 'node:os';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import { WebSocket } from 'ws';
import { messageYjsUpdate, writeSyncStep1, writeUpdate } from 'y-protocols/sync';
import * as Y from 'yjs';
import { setting } from './support/measure.ts';
import { fmt, latencies, latencyJson, machine, profiled, quick, ratio, startSyncServers, SyncPeer, table, type Latencies } from './support/sync-peer.ts';

const DEVICES = setting('BENCH_DRAFT_DEVICES', 10, 2, 10);
const KEYSTROKES = quick ? 60 : 300;
const WARMUP = 20;
const TEXT = 'Patient reports pain 4/10 with stairs, improved from last visit. Slept well; no falls since last visit. ';

/** A device of either server: send one update, be told when an update arrives. */
interface Device {
  sendUpdate(update: Uint8Array): void;
  onUpdate(fn: () => void): void;
  close(): void;
}

/** Types KEYSTROKES characters on devices[0]; answers every (keystroke, other device) latency. */
async function type(devices: readonly Device[], keystrokes: number, warmup: number): Promise<number[]> {
  const doc = new Y.Doc();
  const text = doc.getText('subjective');
  let pending = 0;
  let sentAt = 0;
  let release: () => void = () => {};
  const out: number[] = [];
  let recording = false;
  for (const d of devices.slice(1)) {
    d.onUpdate(() => {
      if (recording) out.push(performance.now() - sentAt);
      if (--pending === 0) release();
    });
  }
  doc.on('update', (update: Uint8Array) => {
    pending = devices.length - 1;
    sentAt = performance.now();
    devices[0]?.sendUpdate(update);
  });
  for (let k = 0; k < warmup + keystrokes; k++) {
    recording = k >= warmup;
    const all = new Promise<void>((resolve) => {
      release = resolve;
    });
    const timer = setTimeout(() => process.stderr.write(`  keystroke ${k}: ${pending} device(s) still waiting after 10 s\n`), 10_000);
    text.insert(text.length, TEXT[k % TEXT.length] as string);
    await all;
    clearTimeout(timer);
  }
  return out;
}

const updateFrame = (update: Uint8Array): Uint8Array => {
  const e = encoding.createEncoder();
  writeUpdate(e, update);
  return encoding.toUint8Array(e);
};

/** Our devices: sync sockets of one clinician, each with the visit's draft open. */
async function fieldchartDevices(url: string, token: string, docName: string, n: number): Promise<Device[]> {
  const devices: Device[] = [];
  for (let i = 0; i < n; i++) {
    const peer = await SyncPeer.connect(url);
    const synced = peer.next('synced');
    await peer.hello(token);
    await synced;
    const step1 = peer.next('doc', (m) => m.doc === docName);
    peer.send({ type: 'doc_open', doc: docName });
    await step1;
    devices.push({
      sendUpdate: (update) => peer.send({ type: 'doc', doc: docName, message: Buffer.from(updateFrame(update)).toString('base64') }),
      onUpdate(fn) {
        peer.on((m) => {
          if (m.type === 'doc_error') throw new Error(`doc_error ${m.code}: ${m.message}`);
          if (m.type !== 'doc' || m.doc !== docName) return false;
          const bytes = Buffer.from(m.message, 'base64');
          const d = decoding.createDecoder(bytes);
          if (decoding.readVarUint(d) === messageYjsUpdate) fn();
          return true;
        });
      },
      close: () => peer.close(),
    });
  }
  return devices;
}

// Hocuspocus frames: varString(document), varUint(message type), payload (hocuspocus/common).
const HP_SYNC = 0;
const HP_AUTH = 2;

function hpFrame(docName: string, type: number, write: (e: encoding.Encoder) => void): Uint8Array {
  const e = encoding.createEncoder();
  encoding.writeVarString(e, docName);
  encoding.writeVarUint(e, type);
  write(e);
  return encoding.toUint8Array(e);
}

/** Hocuspocus devices: a raw client per socket, authenticated (any token) and synced. */
async function hocuspocusDevices(url: string, docName: string, n: number): Promise<Device[]> {
  const devices: Device[] = [];
  for (let i = 0; i < n; i++) {
    const ws = new WebSocket(url, { perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    const listeners: Array<(type: number, sub: number | null) => void> = [];
    ws.on('message', (data: Buffer) => {
      const d = decoding.createDecoder(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      decoding.readVarString(d);
      const type = decoding.readVarUint(d);
      const sub = type === HP_SYNC ? decoding.readVarUint(d) : null;
      for (const l of listeners) l(type, sub);
    });
    const authenticated = new Promise<void>((resolve) => listeners.push((type) => type === HP_AUTH && resolve()));
    ws.send(
      hpFrame(docName, HP_AUTH, (e) => {
        encoding.writeVarUint(e, 0); // the token sub-message
        encoding.writeVarString(e, 'bench');
      }),
    );
    ws.send(hpFrame(docName, HP_SYNC, (e) => writeSyncStep1(e, new Y.Doc())));
    await authenticated;
    devices.push({
      sendUpdate: (update) => ws.send(hpFrame(docName, HP_SYNC, (e) => writeUpdate(e, update))),
      onUpdate: (fn) => listeners.push((type, sub) => type === HP_SYNC && sub === messageYjsUpdate && fn()),
      close: () => ws.close(),
    });
  }
  // Let the initial sync steps settle before typing.
  await new Promise((r) => setTimeout(r, 200));
  return devices;
}

const loadBefore = os.loadavg()[0] ?? 0;
const child = await startSyncServers({ hocuspocus: true });
try {
  const s = child.servers;
  if (!s.hocuspocus) throw new Error('the Hocuspocus servers did not start');
  process.stderr.write(`sync-drafts: ${s.backend}, ${DEVICES} devices, ${KEYSTROKES} keystrokes after ${WARMUP} warm-up, load ${fmt(os.loadavg()[0] ?? 0, 2)}\n`);
  const user = await child.rpc('register', {});
  const { visitIds } = await child.rpc('seed-bulk', { userId: user.userId, patients: 1, visits: 3, eventsPerVisit: 0, withEvents: false });

  const rows: Array<[string, Latencies]> = [];
  const run = async (name: string, devices: Device[]) => {
    process.stderr.write(`  ${name}…\n`);
    try {
      rows.push([name, latencies(await type(devices, KEYSTROKES, WARMUP))]);
    } finally {
      for (const d of devices) d.close();
    }
  };
  await run('hocuspocus', await hocuspocusDevices(s.hocuspocus.memory, `visit/${visitIds[0]}/soap`, DEVICES));
  await run('hocuspocus+db', await hocuspocusDevices(s.hocuspocus.database, `visit/${visitIds[1]}/soap`, DEVICES));
  const ours = await fieldchartDevices(s.syncUrl, user.token, `visit/${visitIds[2]}/soap`, DEVICES);
  await profiled(child, `sync-drafts-${s.backend}`, () => run('fieldchart', ours));

  const base = rows[0]?.[1] as Latencies;
  const dbBase = rows[1]?.[1] as Latencies;
  console.log(
    table(
      ['server', 'n', 'p50 ms', 'p99 ms', 'mean ms', 'p50 vs hp', 'p99 vs hp', 'p50 vs hp+db', 'p99 vs hp+db'],
      rows.map(([name, l]) => [
        name,
        String(l.n),
        fmt(l.p50, 2),
        fmt(l.p99, 2),
        fmt(l.mean, 2),
        ratio(l.p50, base.p50),
        ratio(l.p99, base.p99),
        ratio(l.p50, dbBase.p50),
        ratio(l.p99, dbBase.p99),
      ]),
    ),
  );
  console.log(
    JSON.stringify({
      bench: 'sync-drafts',
      backend: s.backend,
      quick,
      devices: DEVICES,
      keystrokes: KEYSTROKES,
      ...machine(loadBefore),
      results: rows.map(([name, l]) => ({
        server: name,
        ...latencyJson(l),
        p50RatioToHocuspocus: Number((l.p50 / base.p50).toFixed(2)),
        p99RatioToHocuspocus: Number((l.p99 / base.p99).toFixed(2)),
        p50RatioToHocuspocusDb: Number((l.p50 / dbBase.p50).toFixed(2)),
        p99RatioToHocuspocusDb: Number((l.p99 / dbBase.p99).toFixed(2)),
      })),
    }),
  );
} finally {
  await child.stop();
}
