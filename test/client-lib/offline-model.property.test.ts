/**
 * A model-based property test of the offline client: random interleavings of writes, network
 * cuts, app restarts and token expiry on 2–3 devices of one clinician (each a real client on its
 * own PGlite directory, behind its own TCP proxy, against a real server). The model records
 * every write each device actually queued; at the end everyone comes online and the server must
 * hold the union of those writes exactly once, under the protocol's conflict rules, and every
 * device must read what the server holds.
 *
 * Timer events race between devices, so which write the server refuses depends on the order it
 * processed the devices' streams. The oracle does not guess that order: it checks that SOME
 * merge of the devices' streams (each kept in its own order) explains exactly the writes that
 * were acknowledged, the ones that were refused, and the events the server ends with.
 *
 * A failure prints its seed and path; replay with
 *   FC_SEED=… FC_PATH=… npm test -- offline-model
 * (FC_SHRINK=1 also shrinks, slowly: every attempt is a full run; FC_RUNS overrides the count;
 * FC_LOG=1 prints every run's executed commands.) Timing still varies between a run and its
 * replay, so a race-dependent failure may need a few replays.
 *
 * Two bugs this model found are fixed and checked in the default run: a lost /token/refresh
 * answer signed the device out (the refresh now carries an Idempotency-Key), and a lost
 * `reject` was taken for an ack (the server now answers a replay with the same reject).
 * FC_REFRESH_RACE=0 and FC_STRICT=0 bring back the old leniency, to tell a regression of
 * either from something new.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import * as decoding from 'lib0/decoding';
import * as encoding from 'lib0/encoding';
import { readSyncMessage, writeSyncStep1 } from 'y-protocols/sync';
import * as Y from 'yjs';
import { InvalidWriteError, type FieldchartClient, type Visit } from '../../client-lib/src/index.ts';
import { describeStatus } from '../../client-lib/src/sync/status.ts';
import { forEachBackend } from '../helpers/backends.ts';
import { manualClock } from '../helpers/clock.ts';
import { eventually } from '../helpers/eventually.ts';
import { helloSync } from '../helpers/sync-socket.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { API, RATE_LIMITS_OFF, registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { openClient, openDeviceDb, tempDataDir } from './support.ts';

const STEPS = ['start_travel', 'arrive', 'start_documentation', 'complete'] as const;
type Step = (typeof STEPS)[number];
const SECTIONS = ['subjective', 'objective', 'assessment', 'plan'] as const;
type Section = (typeof SECTIONS)[number];
const ACCESS_TTL_SECONDS = 3600;
const WAIT = { timeoutMs: 90_000, intervalMs: 50 };
const MIN = 60_000;

// ——— the model ———

interface TimerWrite {
  readonly device: number;
  readonly mutationId: number;
  readonly events: readonly { readonly type: Step; readonly time: number }[];
}

interface Model {
  readonly devices: number;
  readonly online: boolean[];
  /** Seeded and scheduled visits, in the order they became known (commands pick by index). */
  readonly visits: string[];
  /** Seeded and created patients. */
  readonly patients: string[];
  readonly created: Map<string, { first: string; last: string; device: number }>;
  readonly scheduled: Map<string, { device: number; patient: string; date: string; start: string }>;
  readonly timerWrites: Map<string, TimerWrite[]>;
  readonly mileage: { visit: string; device: number; recordedAt: number; total: number }[];
  readonly updates: { patient: string; device: number; first: string }[];
  /** Fragments typed into each visit's sections. */
  readonly fragments: Map<string, Map<Section, string[]>>;
  /** Writes the device refused itself (never queued). */
  localRefusals: number;
  seq: number;
}

interface Device {
  readonly index: number;
  readonly dir: string;
  readonly proxy: TcpProxy;
  client: FieldchartClient;
  readonly docs: Map<string, Y.Doc>;
}

interface World {
  readonly server: TestServer;
  readonly clock: ReturnType<typeof manualClock>;
  readonly user: Awaited<ReturnType<typeof registerUser>>;
  readonly devices: Device[];
  /** Timer event times of a visit: its date at 08:00 UTC, step k at +10k minutes. */
  readonly timerBase: Map<string, number>;
  readonly mileageBase: number;
  /** Sockets the server closed for an expired token (4401), seen by the devices. */
  unauthorized: number;
  /** Per device: how many times it was welcomed by the server. */
  readonly connects: number[];
  /**
   * Per device: after an expiry, the welcome count it must pass before the network may be cut
   * or the app closed under it (null: nothing to wait for). See {@link settleRefresh}.
   */
  readonly refreshDue: (number | null)[];
  /** `device:mutationId` of every write whose `ack` a device received. */
  readonly acked: Set<string>;
  /** Refused writes that reached no rejection list (the known lost-reject bug). */
  readonly silentlyDropped: string[];
  /** Per device: its last status changes, acks and feed units, for a sync that never settles (see {@link synced}). */
  readonly traces: string[][];
}

/**
 * Follows what a device goes through: welcomes, acks received, 4401s (for the run's summary),
 * and a trace of its last status changes, acks and feed units, the time counted from each open.
 */
function watch(w: World, index: number, client: FieldchartClient): void {
  let last: unknown = null;
  let connected = client.sync.status.connected;
  const trace = (w.traces[index] ??= []);
  if (trace.length > 0) trace.push('(the app opened again)');
  const started = Date.now();
  const note = (line: string) => {
    trace.push(`+${Date.now() - started}ms ${line}`);
    if (trace.length > 60) trace.splice(0, trace.length - 60);
  };
  client.sync.on('status', (s) => {
    note(describeStatus(s));
    if (s.lastError !== last && s.lastError?.code === 'unauthorized') w.unauthorized++;
    last = s.lastError;
    if (s.connected && !connected) w.connects[index] = (w.connects[index] ?? 0) + 1;
    connected = s.connected;
  });
  // A `{duplicate: true}` ack is an applied write too: a refused one is answered by its reject.
  client.sync.on('ack', (a) => {
    w.acked.add(`${index}:${a.mutationId}`);
    note(`ack ${a.mutationId} ${a.name}`);
  });
  client.sync.on('change', (c) => {
    if (c.reason !== 'write') note(`change ${c.reason}`);
  });
}

/** A device's whenSynced; a timeout says what the device went through before it. */
async function synced(w: World, d: Device): Promise<void> {
  try {
    await d.client.sync.whenSynced(WAIT);
  } catch (e) {
    const trace = (w.traces[d.index] ?? []).join('\n    ');
    throw new Error(`d${d.index}: ${(e as Error).message}\n  its last status changes, acks and feed units (ms since the app opened):\n    ${trace}`, { cause: e });
  }
}

/**
 * With FC_REFRESH_RACE=0 only: a device whose token expired finishes reconnecting before the
 * model cuts its network or restarts it (the old guard against the lost-refresh-answer bug,
 * fixed: refreshes are idempotent by key). By default every interleaving stays random.
 */
async function settleRefresh(w: World, m: Model, d: number): Promise<void> {
  const due = w.refreshDue[d];
  if (due === null || due === undefined || !m.online[d] || process.env.FC_REFRESH_RACE !== '0') return;
  await eventually(() => assert.ok((w.connects[d] ?? 0) > due, `d${d} reconnected after the expiry`), WAIT);
  w.refreshDue[d] = null;
}

type Cmd = fc.AsyncCommand<Model, World>;

const frag = (m: Model, d: number) => `«${d}.${++m.seq}»`;
const dateOf = (clock: World['clock']) => clock.now().toISOString().slice(0, 10);

class RecordTimer implements Cmd {
  constructor(readonly d: number, readonly v: number, readonly mode: 'canonical' | 'jitter' | 'invalid', readonly jitter: number, readonly count: 1 | 2) {}
  check = () => true;
  async run(m: Model, w: World) {
    const visitId = m.visits[this.v % m.visits.length] as string;
    const client = w.devices[this.d]!.client;
    const visit = await client.visits.get(visitId);
    if (!visit) return;
    const have = new Set(visit.timer_events.map((e) => e.event_type));
    const next = STEPS.findIndex((s) => !have.has(s));
    if (next === -1) return;
    const base = w.timerBase.get(visitId) as number;
    const at = (k: number) => base + 10 * k * MIN + (this.mode === 'jitter' ? this.jitter * MIN : 0);
    // 'invalid': a step whose predecessor the device does not have, refused here and never queued.
    const invalid = this.mode === 'invalid';
    if (invalid && next + 1 >= STEPS.length) return;
    const steps = invalid ? [STEPS[next + 1] as Step] : STEPS.slice(next, next + this.count);
    const events = steps.map((s) => ({ type: s, time: at(STEPS.indexOf(s)) }));
    // Acks may settle other writes meanwhile, so the pending count is no measure: every queued
    // write announces itself (change 'write'), and a refused one must not.
    let queued = 0;
    const off = client.sync.on('change', (c) => {
      if (c.reason === 'write') queued++;
    });
    let mutationId: number;
    try {
      ({ mutationId } = await client.visits.recordTimerEvents(visitId, events.map((e) => ev(e.type, e.time))));
    } catch (err) {
      if (invalid) {
        assert.ok(err instanceof InvalidWriteError, String(err));
        assert.equal(err.code, 'invalid_timer_sequence');
        assert.equal(queued, 0, 'a refused write is not queued');
      } else {
        // The device's copy of the visit may change between the read above and the write:
        // another device's events reach it through the feed, or the server refuses one of its
        // own earlier writes and the device rolls that write back (the step before this one is
        // gone). The device then refuses the write by the same rule the server would. Only a
        // refusal that the visit as it is now explains — its next missing step is no longer
        // this write's first — is one the model accepts.
        const now = await client.visits.get(visitId);
        const haveNow = new Set(now?.timer_events.map((e) => e.event_type));
        const moved = STEPS.findIndex((s) => !haveNow.has(s)) !== next;
        if (!(err instanceof InvalidWriteError) || err.code !== 'invalid_timer_sequence' || !moved) throw err;
      }
      m.localRefusals++;
      return;
    } finally {
      off();
    }
    if (invalid) {
      // Accepted: right only if the missing step reached the device between the read above and
      // the write (another device's event through the feed), which makes this one the next.
      const now = await client.visits.get(visitId);
      assert.ok(
        now?.timer_events.some((e) => e.event_type === STEPS[next]),
        `${STEPS[next + 1]} accepted without ${STEPS[next]} on the device`,
      );
    }
    const writes = m.timerWrites.get(visitId) ?? [];
    writes.push({ device: this.d, mutationId, events });
    m.timerWrites.set(visitId, writes);
    // Shown at once, before the server has it.
    const shown = await client.visits.get(visitId);
    for (const e of events) assert.ok(shown?.timer_events.some((x) => x.event_type === e.type), `${e.type} shown at once`);
  }
  toString = () => `timer(d${this.d}, v${this.v}, ${this.mode}${this.mode === 'jitter' ? `+${this.jitter}` : ''}, x${this.count})`;
}

class SetMileage implements Cmd {
  constructor(readonly d: number, readonly v: number, readonly minute: number, readonly miles: number) {}
  check = () => true;
  async run(m: Model, w: World) {
    const visitId = m.visits[this.v % m.visits.length] as string;
    const client = w.devices[this.d]!.client;
    if (!(await client.visits.get(visitId))) return;
    // Distinct device times (the seq breaks ties), so the last writer is well defined.
    const recordedAt = w.mileageBase + this.minute * MIN + ++m.seq;
    const total = this.miles + (m.seq % 100) / 100;
    await client.visits.setMileage(visitId, { total_miles: total, recorded_at: new Date(recordedAt).toISOString() });
    m.mileage.push({ visit: visitId, device: this.d, recordedAt, total });
  }
  toString = () => `mileage(d${this.d}, v${this.v}, +${this.minute}min, ${this.miles})`;
}

class CreatePatient implements Cmd {
  constructor(readonly d: number) {}
  check = () => true;
  async run(m: Model, w: World) {
    const first = `P${++m.seq}`;
    const last = `Device${this.d}`;
    const { uuid } = await w.devices[this.d]!.client.patients.create({ first_name: first, last_name: last });
    m.created.set(uuid, { first, last, device: this.d });
    m.patients.push(uuid);
  }
  toString = () => `createPatient(d${this.d})`;
}

class UpdatePatient implements Cmd {
  constructor(readonly d: number, readonly p: number) {}
  check = () => true;
  async run(m: Model, w: World) {
    const uuid = m.patients[this.p % m.patients.length] as string;
    const client = w.devices[this.d]!.client;
    if (!(await client.patients.get(uuid))) return;
    const first = `U${++m.seq}`;
    await client.patients.update(uuid, { first_name: first });
    m.updates.push({ patient: uuid, device: this.d, first });
    assert.equal((await client.patients.get(uuid))?.first_name, first, 'shown at once');
  }
  toString = () => `updatePatient(d${this.d}, p${this.p})`;
}

class ScheduleVisit implements Cmd {
  constructor(readonly d: number, readonly p: number) {}
  check = (m: Readonly<Model>) => m.visits.length < 5;
  async run(m: Model, w: World) {
    const patient = m.patients[this.p % m.patients.length] as string;
    const client = w.devices[this.d]!.client;
    if (!(await client.patients.get(patient))) return;
    const date = dateOf(w.clock);
    const start = `1${++m.seq % 10}:${String(m.seq % 60).padStart(2, '0')}`;
    const { uuid } = await client.visits.schedule({ patient_uuid: patient, visit_date: date, start_time: start });
    m.scheduled.set(uuid, { device: this.d, patient, date, start });
    m.visits.push(uuid);
    w.timerBase.set(uuid, Date.parse(`${date}T08:00:00.000Z`));
  }
  toString = () => `scheduleVisit(d${this.d}, p${this.p})`;
}

class TypeDraft implements Cmd {
  constructor(readonly d: number, readonly v: number, readonly section: Section, readonly pick: number) {}
  check = () => true;
  async run(m: Model, w: World) {
    const visitId = m.visits[this.v % m.visits.length] as string;
    const device = w.devices[this.d]!;
    if (!(await device.client.visits.get(visitId))) return;
    let doc = device.docs.get(visitId);
    if (!doc) {
      doc = await device.client.drafts.open(visitId);
      device.docs.set(visitId, doc);
    }
    const text = doc.getText(this.section);
    // Only between fragments: a fragment is never split, so each must survive whole.
    const s = text.toString();
    const bounds = [0, ...[...s].flatMap((c, i) => (c === '»' ? [i + 1] : []))];
    const fragment = frag(m, this.d);
    text.insert(bounds[this.pick % bounds.length] as number, fragment);
    const byVisit = m.fragments.get(visitId) ?? new Map<Section, string[]>();
    byVisit.set(this.section, [...(byVisit.get(this.section) ?? []), fragment]);
    m.fragments.set(visitId, byVisit);
  }
  toString = () => `type(d${this.d}, v${this.v}, ${this.section}, @${this.pick})`;
}

class GoOffline implements Cmd {
  constructor(readonly d: number) {}
  check = (m: Readonly<Model>) => m.online[this.d] === true;
  async run(m: Model, w: World) {
    await settleRefresh(w, m, this.d);
    w.devices[this.d]!.proxy.cut();
    m.online[this.d] = false;
  }
  toString = () => `offline(d${this.d})`;
}

class GoOnline implements Cmd {
  constructor(readonly d: number) {}
  check = (m: Readonly<Model>) => m.online[this.d] === false;
  async run(m: Model, w: World) {
    w.devices[this.d]!.proxy.restore();
    m.online[this.d] = true;
  }
  toString = () => `online(d${this.d})`;
}

/** Every device comes back at once: their uploads race. */
class AllOnline implements Cmd {
  check = (m: Readonly<Model>) => m.online.filter((o) => !o).length >= 2;
  async run(m: Model, w: World) {
    for (const d of w.devices) d.proxy.restore();
    m.online.fill(true);
  }
  toString = () => 'allOnline()';
}

class Restart implements Cmd {
  constructor(readonly d: number) {}
  check = () => true;
  async run(m: Model, w: World) {
    await settleRefresh(w, m, this.d);
    const device = w.devices[this.d]!;
    const pending = device.client.sync.status.pending;
    await device.client.close();
    device.docs.clear();
    device.client = await openClient(device.proxy.url, device.dir);
    watch(w, this.d, device.client);
    assert.equal(device.client.sync.status.signedIn, true, 'the stored session resumes');
    // Acks may have arrived meanwhile, so at most what was pending is pending.
    assert.ok(device.client.sync.status.pending <= pending, `pending ${device.client.sync.status.pending} > ${pending}`);
  }
  toString = () => `restart(d${this.d})`;
}

/** Every access token issued so far expires on the server; connected devices reconnect and meet 4401. */
class ExpireTokens implements Cmd {
  check = () => true;
  async run(_m: Model, w: World) {
    w.clock.advance(ACCESS_TTL_SECONDS + 1);
    for (const d of w.devices) {
      // A device offline now meets the 4401 when it comes back: it must reconnect after that.
      w.refreshDue[d.index] ??= w.connects[d.index] ?? 0;
      d.client.sync.reconnect();
    }
  }
  toString = () => 'expireTokens()';
}

/** Online devices settle; invariants that hold at any time are checked on every device. */
class Check implements Cmd {
  check = () => true;
  async run(m: Model, w: World) {
    for (const d of w.devices) if (m.online[d.index]) await synced(w, d);
    for (const d of w.devices) {
      if (m.online[d.index]) assert.equal(d.client.sync.status.pending, 0);
      const local = new Set((await d.client.patients.list()).map((p) => p.uuid));
      for (const [uuid, c] of m.created) if (c.device === d.index) assert.ok(local.has(uuid), `d${d.index} shows its own patient ${uuid}`);
      for (const p of local) assert.ok(m.patients.includes(p), `d${d.index} shows an unknown patient ${p}`);
      for (const visitId of m.visits) {
        const v = await d.client.visits.get(visitId);
        if (v) assertValidSequence(v, `d${d.index} ${visitId}`);
      }
    }
  }
  toString = () => 'check()';
}

function assertValidSequence(v: Visit, label: string): void {
  const types = v.timer_events.map((e) => e.event_type);
  assert.deepEqual(types, STEPS.slice(0, types.length), `${label}: steps in order, once each`);
  const times = v.timer_events.map((e) => Date.parse(e.event_time));
  assert.deepEqual(times, [...times].sort((a, b) => a - b), `${label}: times in order`);
}

const ev = (event_type: Step, time: number) => ({ event_type, event_time: new Date(time).toISOString(), latitude: 41.925, longitude: -87.652, accuracy: 8 });

function commandsFor(devices: number): fc.Arbitrary<Cmd>[] {
  const d = fc.integer({ min: 0, max: devices - 1 });
  const idx = fc.nat({ max: 9 });
  const mode = fc.constantFrom<RecordTimer['mode'][]>('canonical', 'canonical', 'canonical', 'jitter', 'jitter', 'invalid');
  // Timers mostly on the two seeded visits, so that devices race for the same steps.
  const timer = fc.tuple(d, fc.oneof(fc.nat({ max: 1 }), fc.nat({ max: 1 }), idx), mode, fc.integer({ min: 1, max: 4 }), fc.constantFrom<(1 | 2)[]>(1, 1, 2)).map(([dev, v, m, j, n]) => new RecordTimer(dev, v, m, j, n));
  const type = fc.tuple(d, idx, fc.constantFrom(...SECTIONS), fc.nat({ max: 20 })).map(([dev, v, s, p]) => new TypeDraft(dev, v, s, p));
  const offline = d.map((dev) => new GoOffline(dev));
  const online = d.map((dev) => new GoOnline(dev));
  // fc.commands picks uniformly among these: repeats weigh the interesting ones.
  return [
    timer,
    timer,
    timer,
    type,
    type,
    fc.tuple(d, idx, fc.nat({ max: 120 }), fc.integer({ min: 1, max: 60 })).map(([dev, v, min, mi]) => new SetMileage(dev, v, min, mi)),
    d.map((dev) => new CreatePatient(dev)),
    fc.tuple(d, idx).map(([dev, p]) => new UpdatePatient(dev, p)),
    fc.tuple(d, idx).map(([dev, p]) => new ScheduleVisit(dev, p)),
    offline,
    offline,
    online,
    online,
    fc.constant(new AllOnline()),
    d.map((dev) => new Restart(dev)),
    fc.constant(new ExpireTokens()),
    fc.constant(new Check()),
  ];
}

// ——— the oracle for timer events ———

type Stored = Map<Step, number>;

/** The protocol's rule (docs/sync-protocol.md, Conflicts), applied to one batch: the new state or null (refused). */
function applyBatch(stored: Stored, batch: TimerWrite['events']): Stored | null {
  const next = new Map(stored);
  const order = batch.map((e, i) => ({ ...e, i })).sort((a, b) => a.time - b.time || STEPS.indexOf(a.type) - STEPS.indexOf(b.type) || a.i - b.i);
  for (const e of order) {
    const existing = next.get(e.type);
    if (existing !== undefined) {
      if (existing === e.time) continue;
      return null;
    }
    const r = STEPS.indexOf(e.type);
    if (r > 0) {
      const prev = next.get(STEPS[r - 1] as Step);
      if (prev === undefined || e.time < prev) return null;
    }
    next.set(e.type, e.time);
  }
  return next;
}

type Outcome = 'acked' | 'rejected' | 'unknown';

/**
 * Whether some merge of the devices' write streams (each in its own order) makes the server
 * acknowledge the `acked` writes, refuse the `rejected` ones and end with `final`. An `unknown`
 * write (its answer never reached the device: the welcome's last_mutation_id settled it) may
 * have gone either way. Answers the refused writes of the first explanation found, or null.
 */
function explain(writes: readonly TimerWrite[], outcome: (w: TimerWrite) => Outcome, final: Stored): TimerWrite[] | null {
  const streams = [...new Set(writes.map((w) => w.device))].map((d) => writes.filter((w) => w.device === d));
  const key = (s: Stored) => STEPS.map((t) => s.get(t) ?? '-').join(',');
  const seen = new Set<string>();
  const search = (pos: number[], state: Stored, refused: TimerWrite[]): TimerWrite[] | null => {
    const k = `${pos.join('.')}|${key(state)}`;
    if (seen.has(k)) return null;
    seen.add(k);
    if (pos.every((p, i) => p === streams[i]!.length)) return key(state) === key(final) ? refused : null;
    for (const [i, stream] of streams.entries()) {
      const w = stream[pos[i] as number];
      if (!w) continue;
      const result = applyBatch(state, w.events);
      const o = outcome(w);
      if (o !== 'unknown' && (result === null) !== (o === 'rejected')) continue;
      const found = search(pos.map((p, j) => (j === i ? p + 1 : p)), result ?? state, result === null ? [...refused, w] : refused);
      if (found) return found;
    }
    return null;
  };
  return search(streams.map(() => 0), new Map(), []);
}

// ——— reading the server ———

async function serverDraft(w: World, token: string, visitId: string): Promise<Record<Section, string>> {
  const name = `visit/${visitId}/soap`;
  const { socket } = await helloSync(`${w.server.url.replace(/^http/, 'ws')}${API}/sync`, token, randomUUID());
  try {
    const doc = new Y.Doc();
    socket.send({ type: 'doc_open', doc: name });
    const e = encoding.createEncoder();
    writeSyncStep1(e, doc);
    socket.send({ type: 'doc', doc: name, message: Buffer.from(encoding.toUint8Array(e)).toString('base64') });
    for (;;) {
      const m = await socket.next('doc', (x) => x.doc === name, 30_000);
      const bytes = Buffer.from(m.message, 'base64');
      // Our step 1 is answered with step 2 (type 1): everything the server holds.
      if (decoding.readVarUint(decoding.createDecoder(bytes)) !== 1) continue;
      readSyncMessage(decoding.createDecoder(bytes), encoding.createEncoder(), doc, null);
      return Object.fromEntries(SECTIONS.map((s) => [s, doc.getText(s).toString()])) as Record<Section, string>;
    }
  } finally {
    socket.close();
  }
}

/** What a device and the server must agree on about a visit. */
const visitView = (v: Visit) => ({
  uuid: v.uuid,
  patient_uuid: v.patient_uuid,
  referral_uuid: v.referral_uuid,
  visit_date: v.visit_date,
  start_time: v.start_time,
  status: v.status,
  evv: v.evv,
  timer_events: v.timer_events.map((e) => ({ ...e, event_time: new Date(e.event_time).toISOString() })),
  mileage: v.mileage ? { ...v.mileage, recorded_at: new Date(v.mileage.recorded_at).toISOString() } : null,
});

const patientView = (p: { uuid: string; first_name: string; last_name: string }) => ({ uuid: p.uuid, first_name: p.first_name, last_name: p.last_name });

async function finalCheck(m: Model, w: World): Promise<void> {
  for (const d of w.devices) d.proxy.restore();
  const res = await w.server.api('POST', '/sign-in', { body: { email: w.user.email, password: w.user.password } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const token = res.body.data.token as string;
  const serverVisit = async (id: string): Promise<Visit> => {
    const r = await w.server.api('GET', `/visit-details/${id}`, { token });
    assert.equal(r.status, 200, `${id}: ${JSON.stringify(r.body)}`);
    return r.body.data as Visit;
  };
  const serverPatients = async () => {
    const r = await w.server.api('GET', '/patient/my-patients?per_page=100', { token });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return r.body.data as { uuid: string; first_name: string; last_name: string }[];
  };

  // Everyone uploads; then every device shows exactly what the server holds.
  for (const d of w.devices) await synced(w, d);
  await eventually(async () => {
    for (const d of w.devices) {
      assert.equal(d.client.sync.status.pending, 0, `d${d.index} outbox empty`);
      assert.ok(d.client.sync.status.current, `d${d.index} current`);
      for (const id of m.visits) {
        assert.deepEqual(visitView((await d.client.visits.get(id)) as Visit), visitView(await serverVisit(id)), `d${d.index} reads visit ${id} as the server`);
      }
      const sort = (ps: { uuid: string; first_name: string; last_name: string }[]) => ps.map(patientView).sort((a, b) => a.uuid.localeCompare(b.uuid));
      assert.deepEqual(sort(await d.client.patients.list()), sort(await serverPatients()), `d${d.index} reads the patients as the server`);
      for (const r of await d.client.visits.receipts()) assert.notEqual(r.state, 'on_device', `d${d.index} receipt ${JSON.stringify(r)}`);
    }
  }, WAIT);

  // Patients: every created one exactly once, as written, or as the last update of some device.
  const patients = await serverPatients();
  assert.deepEqual(patients.map((p) => p.uuid).sort(), [...m.patients].sort(), 'patients by uuid: no loss, no duplicate, nothing else');
  for (const p of patients) {
    const created = m.created.get(p.uuid);
    if (created) assert.equal(p.last_name, created.last);
    const ups = m.updates.filter((u) => u.patient === p.uuid);
    const lastPerDevice = [...new Set(ups.map((u) => u.device))].map((d) => ups.filter((u) => u.device === d).at(-1)!.first);
    if (ups.length > 0) assert.ok(lastPerDevice.includes(p.first_name), `${p.uuid}: ${p.first_name} is the last update of some device (${lastPerDevice})`);
    else if (created) assert.equal(p.first_name, created.first);
  }

  // Rejections: only timer writes the merge oracle explains, none lost.
  const rejectedBy = new Map<number, Set<number>>();
  for (const d of w.devices) {
    const list = await d.client.rejections.list();
    for (const r of list) {
      assert.equal(r.name, 'visit.timer_events', `d${d.index} only timer writes are refused: ${JSON.stringify(r)}`);
      assert.equal(r.status, 422);
      assert.equal(r.code, 'invalid_timer_sequence');
      const mine = (m.timerWrites.get(r.scheduleUuid as string) ?? []).some((x) => x.device === d.index && x.mutationId === r.mutationId);
      assert.ok(mine, `d${d.index} rejection ${r.mutationId} is one of its timer writes`);
    }
    rejectedBy.set(d.index, new Set(list.map((r) => r.mutationId)));
  }
  for (const visitId of m.visits) {
    const v = await serverVisit(visitId);
    assertValidSequence(v, `server ${visitId}`);
    const writes = m.timerWrites.get(visitId) ?? [];
    const final: Stored = new Map(v.timer_events.map((e) => [e.event_type, Date.parse(e.event_time)]));
    const outcome = (x: TimerWrite): Outcome =>
      rejectedBy.get(x.device)?.has(x.mutationId) ? 'rejected' : w.acked.has(`${x.device}:${x.mutationId}`) ? 'acked' : 'unknown';
    // Every event on the server was written by a device, in a write the server did not refuse.
    for (const [type, time] of final) {
      assert.ok(writes.some((x) => outcome(x) !== 'rejected' && x.events.some((e) => e.type === type && e.time === time)), `${visitId}: ${type}@${time} came from a write that was not refused`);
    }
    // Every acknowledged write is on the server (a duplicate of another device's is the same fact).
    for (const x of writes) if (outcome(x) === 'acked') for (const e of x.events) assert.equal(final.get(e.type), e.time, `${visitId}: acknowledged ${e.type}@${e.time} (d${x.device} #${x.mutationId}) is on the server`);
    const refused = explain(writes, outcome, final);
    assert.ok(refused, `${visitId}: no order of the devices' streams explains the outcome ${JSON.stringify({ writes: writes.map((x) => ({ ...x, outcome: outcome(x) })), final: [...final] })}`);
    // A refused write whose `reject` frame was lost (socket dropped, app closed) must still end
    // on the device's rejection list: the replay is refused again (FC_STRICT=0 tolerates it).
    const silent = refused.filter((x) => outcome(x) === 'unknown');
    if (silent.length > 0) {
      w.silentlyDropped.push(...silent.map((x) => `${visitId} d${x.device}#${x.mutationId} ${JSON.stringify(x.events)}`));
      assert.ok(process.env.FC_STRICT === '0', `${visitId}: refused writes surfaced nowhere (no rejection on the device): ${w.silentlyDropped.join('; ')}`);
    }

    // Mileage: the write with the latest recorded_at.
    const ms = m.mileage.filter((x) => x.visit === visitId);
    const latest = ms.reduce<(typeof ms)[number] | null>((a, b) => (a && a.recordedAt > b.recordedAt ? a : b), null);
    if (!latest) assert.equal(v.mileage, null);
    else {
      assert.equal(v.mileage?.total_miles, latest.total, `${visitId}: last writer wins by recorded_at`);
      assert.equal(Date.parse(v.mileage?.recorded_at ?? ''), latest.recordedAt);
    }
    const sched = m.scheduled.get(visitId);
    if (sched) assert.deepEqual([v.patient_uuid, v.visit_date, v.start_time], [sched.patient, sched.date, sched.start]);
  }

  // Drafts: every device's copy and the server's converge, with every fragment once and nothing else.
  for (const [visitId, sections] of m.fragments) {
    const docs = await Promise.all(w.devices.map(async (d) => d.docs.get(visitId) ?? d.client.drafts.open(visitId)));
    await eventually(async () => {
      const server = await serverDraft(w, token, visitId);
      for (const s of SECTIONS) {
        const expected = sections.get(s) ?? [];
        const text = server[s];
        for (const f of expected) assert.equal(text.split(f).length - 1, 1, `${visitId}/${s}: ${f} once in ${text}`);
        assert.equal(text.length, expected.join('').length, `${visitId}/${s}: only the typed fragments: ${text}`);
        docs.forEach((doc, i) => assert.equal(doc.getText(s).toString(), text, `d${i} ${visitId}/${s} equals the server's`));
      }
      for (const d of w.devices) assert.equal((await d.client.visits.receipt(visitId)).draftOnDeviceOnly, false);
    }, WAIT);
  }
}

// ——— the run ———

const copyDir = (from: string, to: string) => promisify(execFile)('cp', ['-R', `${from}/.`, to]);

forEachBackend('offline client model', (backend) => {
  let server: TestServer;
  let template: string;
  const clock = manualClock();
  before(async () => {
    // Rate limits off: the final check reads as the model's user, polling every 50 ms on the
    // manual clock, whose minute barely moves; on a slow machine its reads passed the user's
    // 1200 a minute, and every read after was 429 (CI 2026-12-02). Limits have their own test.
    server = await startTestServer(backend, {
      clock,
      env: { ACCESS_TOKEN_TTL_SECONDS: String(ACCESS_TTL_SECONDS), ...RATE_LIMITS_OFF },
    });
    // A migrated, empty device database to copy: creating one costs seconds, copying one does not,
    // with cp(1): on disk fs.promises.cp took 1.4–1.6 s for its thousand files, `cp -R` 0.9 s.
    // (Nothing but the schema: each copy still generates its own client id on first start.)
    template = tempDataDir();
    await (await openDeviceDb(template)).close();
  });
  after(async () => {
    await server.close();
    fs.rmSync(template, { recursive: true, force: true });
  });

  async function setUp(devices: number): Promise<{ model: Model; world: World }> {
    const user = await registerUser(server);
    const put = await server.api('PUT', '/my-settings', { token: user.token, body: { time_zone: 'UTC' } });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const p = await server.api('POST', '/patient/create', { token: user.token, body: { first_name: 'Seed', last_name: 'Patient' } });
    assert.equal(p.status, 200, JSON.stringify(p.body));
    const date = dateOf(clock);
    const visits: string[] = [];
    for (const start of ['09:00', '13:00']) {
      const r = await server.api('POST', '/schedule-visit-request-save', { token: user.token, body: { patient_uuid: p.body.data.uuid, visit_date: date, start_time: start } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      visits.push(r.body.data.uuid);
    }
    const world: World = { server, clock, user, devices: [], timerBase: new Map(visits.map((v) => [v, Date.parse(`${date}T08:00:00.000Z`)])), mileageBase: Date.parse(`${date}T12:00:00.000Z`), unauthorized: 0, connects: Array(devices).fill(0), refreshDue: Array(devices).fill(null), acked: new Set(), silentlyDropped: [], traces: [] };
    const opened = await Promise.all(
      Array.from({ length: devices }, async (_, index) => {
        const proxy = await startTcpProxy(server.url);
        const dir = tempDataDir();
        await copyDir(template, dir);
        const client = await openClient(proxy.url, dir);
        await client.signIn({ email: user.email, password: user.password });
        return { index, dir, proxy, client, docs: new Map<string, Y.Doc>() };
      }),
    );
    world.devices.push(...opened);
    for (const d of world.devices) {
      watch(world, d.index, d.client);
      await synced(world, d);
    }
    const model: Model = {
      devices,
      online: world.devices.map(() => true),
      visits,
      patients: [p.body.data.uuid],
      created: new Map(),
      scheduled: new Map(),
      timerWrites: new Map(),
      mileage: [],
      updates: [],
      fragments: new Map(),
      localRefusals: 0,
      seq: 0,
    };
    return { model, world };
  }

  async function tearDown(w: World): Promise<void> {
    await Promise.all(
      w.devices.map(async (d) => {
        await d.client.close().catch(() => undefined);
        await d.proxy.close();
        await fs.promises.rm(d.dir, { recursive: true, force: true });
      }),
    );
  }

  test('random interleavings on 2–3 devices end with the union of their writes, exactly once, on the server and every device', async (t) => {
    const stats = { runs: 0, silentlyDropped: [] as string[], commands: 0, unauthorized: 0, restarts: 0, expiries: 0, offline: 0, timerWrites: 0, rejected: 0, localRefusals: 0, patients: 0, mileage: 0, fragments: 0 };
    const replay = process.env.FC_SEED ? { seed: Number(process.env.FC_SEED), ...(process.env.FC_PATH ? { path: process.env.FC_PATH } : {}) } : {};
    const numRuns = Number(process.env.FC_RUNS ?? (process.env.FC_PATH ? 1 : backend.name === 'pglite' ? 12 : 10));
    const scenario = fc.integer({ min: 2, max: 3 }).chain((n) => fc.tuple(fc.constant(n), fc.commands(commandsFor(n), { maxCommands: 25, size: 'max' })));
    await fc.assert(
      fc.asyncProperty(scenario, async ([n, cmds]) => {
        const started = Date.now();
        const { model, world } = await setUp(n);
        try {
          const executed: string[] = [];
          const counted = [...cmds].map((c): Cmd => ({
            check: (m) => c.check(m),
            run: async (m, r) => {
              executed.push(c.toString());
              await c.run(m, r);
            },
            toString: () => c.toString(),
          }));
          await fc.asyncModelRun(() => ({ model, real: world }), counted);
          await finalCheck(model, world);
          stats.runs++;
          stats.commands += executed.length;
          stats.restarts += executed.filter((c) => c.startsWith('restart')).length;
          stats.expiries += executed.filter((c) => c.startsWith('expire')).length;
          stats.offline += executed.filter((c) => c.startsWith('offline')).length;
          stats.timerWrites += [...model.timerWrites.values()].flat().length;
          for (const d of world.devices) stats.rejected += (await d.client.rejections.list()).length;
          stats.localRefusals += model.localRefusals;
          stats.unauthorized += world.unauthorized;
          stats.silentlyDropped.push(...world.silentlyDropped);
          stats.patients += model.created.size;
          stats.mileage += model.mileage.length;
          stats.fragments += [...model.fragments.values()].flatMap((s) => [...s.values()]).flat().length;
          if (process.env.FC_LOG) t.diagnostic(`${n} devices, ${Date.now() - started} ms: ${executed.join(' ')}`);
        } finally {
          await tearDown(world);
        }
      }),
      // The failure's own error in the message: a race seen once under load must be diagnosable
      // from the log of any reporter (TAP prints a message without its cause).
      { numRuns, verbose: 1, endOnFailure: process.env.FC_SHRINK !== '1', includeErrorInReport: true, ...replay },
    );
    t.diagnostic(JSON.stringify(stats));
  });
});
