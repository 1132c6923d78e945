/**
 * One mutation's failure is its own (docs/sync-protocol.md): fast-check batches that mix valid
 * mutations with bad ones — unknown names, wrong types, NUL bytes and lone surrogates, dates
 * PostgreSQL cannot hold, `__proto__` keys, bad `client_time`, arguments that are no object —
 * go through the socket (a frame each, or protocol 5's `mutations` frames cut at random) and
 * through `POST /sync/mutations`, on both databases. Every valid
 * neighbour is applied exactly once (also when the batch is replayed), every bad one gets its
 * own reject (never a retry, a failure, a closed socket or a refused request), and the
 * device's next write goes through. Then the two server-side lines of defence directly: a
 * database error inside one mutation rolls back its savepoint only, and an unexpected error is
 * retried a bounded number of times, then parked as `failed`.
 *
 * Seeds are printed; replay one with FUZZ_SEED=<seed>.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, beforeEach, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import fc from 'fast-check';
import { patients, syncClients } from '@fieldchart/schema/db';
import { MAX_MUTATION_BYTES, MUTATION_NAMES, type ServerMessage } from '@fieldchart/schema/sync';
import { applyMutationBatch, MAX_MUTATION_ATTEMPTS, type MutationMessage, type MutationReply } from '../../../server/src/services/sync/mutation-ledger.ts';
import { createMutationRunner } from '../../../server/src/services/sync/mutation-runner.ts';
import { forEachBackend } from '../../helpers/backends.ts';
import { helloSync, type SyncSocket } from '../../helpers/sync-socket.ts';
import type { TestServer } from '../../helpers/test-server.ts';
import { startTestServer } from '../../helpers/test-server.ts';
import { utcClinician, type User } from '../visits/visit-fixtures.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 20);
/**
 * The default runs stop after 50 s (a slow machine); the runs FUZZ_RUNS asks for all run.
 * fast-check's interruption abandons the run in flight, which goes on beside the next test:
 * so each test has a clinician of its own.
 */
const TIME_LIMIT = process.env.FUZZ_RUNS ? {} : { interruptAfterTimeLimit: 50_000 };
const seedOf = (what: string) => {
  const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
  console.log(`# ${what}: fast-check seed ${seed} (replay with FUZZ_SEED=${seed})`);
  return seed;
};

/** What the server must answer: `ack`, `reject`, or either (9a's edge rules may refuse it earlier). */
type Expect = 'ack' | 'reject' | 'either';
interface Planned {
  readonly name: unknown;
  /** Built at send time: ids of new rows must be fresh on every run, shrinking included. */
  readonly args: () => unknown;
  readonly clientTime: unknown;
  readonly expect: Expect;
  readonly label: string;
}

const now = () => new Date().toISOString();
const person = fc.constantFrom('Ann', 'Lee', 'Zoë', 'Ngozi', "O'Brien", 'Łukasz');
const validCreate = person.map(
  (first): Planned => ({
    name: 'patient.create',
    args: () => ({ uuid: randomUUID(), referral_uuid: randomUUID(), first_name: first, last_name: 'Fuzz', referral: { discipline: 'PT' } }),
    clientTime: now(),
    expect: 'ack',
    label: 'valid',
  }),
);
const withNul = fc.string({ maxLength: 8 }).map((s) => `${s}\u0000${s}`);
const loneSurrogate = fc.constantFrom('\uD800', 'a\uDFFFb', '\uDBFF');
const wrongType = fc.oneof(fc.integer(), fc.boolean(), fc.array(fc.integer(), { maxLength: 3 }), fc.object({ maxDepth: 1 }));
const base = () => ({ uuid: randomUUID(), referral_uuid: randomUUID(), first_name: 'Bad', last_name: 'Fuzz' });
const bad: fc.Arbitrary<Planned> = fc.oneof(
  fc
    .string({ maxLength: 40 })
    .filter((n) => !(MUTATION_NAMES as readonly string[]).includes(n))
    .map((name): Planned => ({ name, args: () => ({}), clientTime: now(), expect: 'reject', label: 'unknown name' })),
  fc.oneof(fc.integer(), fc.constant(null), fc.boolean()).map((name): Planned => ({ name, args: () => ({}), clientTime: now(), expect: 'reject', label: 'name not a string' })),
  fc.oneof(fc.integer(), fc.string({ maxLength: 10 }), fc.constant(null), fc.array(fc.integer(), { maxLength: 3 })).map(
    (args): Planned => ({ name: 'patient.create', args: () => args, clientTime: now(), expect: 'reject', label: 'args not an object' }),
  ),
  fc.oneof(fc.constant(undefined), fc.string({ maxLength: 12 }), fc.integer(), fc.constant('2026-13-45T99:00:00Z')).map(
    (clientTime): Planned => ({ name: 'patient.create', args: () => base(), clientTime, expect: 'reject', label: 'bad client_time' }),
  ),
  fc.record({ field: fc.constantFrom('first_name', 'last_name', 'phone', 'address'), value: wrongType }).map(
    ({ field, value }): Planned => ({ name: 'patient.create', args: () => ({ ...base(), [field]: value }), clientTime: now(), expect: 'reject', label: `wrong type ${field}` }),
  ),
  fc.record({ field: fc.constantFrom('discipline', 'referral_source'), value: withNul }).map(
    ({ field, value }): Planned => ({
      name: 'patient.create',
      args: () => ({ ...base(), referral: { discipline: 'PT', [field]: value } }),
      clientTime: now(),
      expect: 'reject',
      label: `NUL in ${field}`,
    }),
  ),
  fc.record({ field: fc.constantFrom('first_name', 'last_name', 'address'), value: withNul }).map(
    ({ field, value }): Planned => ({ name: 'patient.create', args: () => ({ ...base(), [field]: value }), clientTime: now(), expect: 'either', label: `NUL in PHI ${field}` }),
  ),
  fc.record({ field: fc.constantFrom('first_name', 'address', 'referral_source'), value: loneSurrogate }).map(
    ({ field, value }): Planned => ({
      name: 'patient.create',
      args: () => (field === 'referral_source' ? { ...base(), referral: { [field]: value } } : { ...base(), [field]: value }),
      clientTime: now(),
      expect: 'either',
      label: `lone surrogate in ${field}`,
    }),
  ),
  // Year 0 is no date for PostgreSQL (a 500 before); far dates are valid to it, but not to
  // the clinical range the edge rules set.
  fc.constantFrom('0000-01-01', '0000-12-31').map((d): Planned => ({ name: 'patient.create', args: () => ({ ...base(), referral: { start_of_care: d } }), clientTime: now(), expect: 'reject', label: `date ${d}` })),
  fc.constantFrom('9999-12-31', '0001-01-01', '1000-02-29').map((d): Planned => ({ name: 'patient.create', args: () => ({ ...base(), referral: { start_of_care: d } }), clientTime: now(), expect: 'either', label: `date ${d}` })),
  fc.constant<Planned>({
    name: 'patient.create',
    args: () => JSON.parse(`{"__proto__":{"polluted":true},"constructor":{"prototype":{"x":1}},"uuid":"${randomUUID()}","first_name":"Proto","last_name":"Fuzz"}`),
    clientTime: now(),
    expect: 'either',
    label: '__proto__ keys',
  }),
  fc.constant<Planned>({ name: 'visit.timer_events', args: () => ({ schedule_uuid: randomUUID(), events: 'nope' }), clientTime: now(), expect: 'reject', label: 'timer events not a list' }),
);
/** A batch of 1–8 with at least one valid and one bad mutation, in any order. */
const batch = fc
  .tuple(fc.array(validCreate, { minLength: 1, maxLength: 4 }), fc.array(bad, { minLength: 1, maxLength: 4 }), fc.infiniteStream(fc.boolean()))
  .map(([valid, wrong, coin]) => {
    const out: Planned[] = [];
    const a = [...valid];
    const b = [...wrong];
    while (a.length > 0 || b.length > 0) out.push((b.length === 0 || (a.length > 0 && coin.next().value) ? a.shift() : b.shift()) as Planned);
    return out;
  });

interface Sent {
  readonly id: number;
  readonly planned: Planned;
  readonly args: unknown;
}

const built = (plan: readonly Planned[], firstId: number): Sent[] => plan.map((planned, i) => ({ id: firstId + i, planned, args: planned.args() }));
const wire = (s: Sent) => ({
  mutation_id: s.id,
  name: s.planned.name,
  args: s.args,
  ...(s.planned.clientTime === undefined ? {} : { client_time: s.planned.clientTime }),
});

type Answer = Extract<ServerMessage, { type: 'ack' | 'reject' | 'retry' | 'failed' }>;
const isAnswer = (m: ServerMessage): m is Answer => m.type === 'ack' || m.type === 'reject' || m.type === 'retry' || m.type === 'failed';

/** The answers of `ids` on a socket, taken from the messages after index `from`. */
async function answersOn(socket: SyncSocket, from: number, ids: readonly number[], timeoutMs = 60_000): Promise<Map<number, Answer>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const answers = new Map<number, Answer>();
    const received = socket.received.slice(from).flatMap((m) => (m.type === 'answers' ? m.answers : [m]));
    for (const m of received) if (isAnswer(m) && ids.includes(m.mutation_id) && !answers.has(m.mutation_id)) answers.set(m.mutation_id, m);
    if (answers.size === ids.length) return answers;
    if (Date.now() > deadline) throw new Error(`answered ${answers.size} of ${ids.length}: ${JSON.stringify([...answers.values()])}`);
    const closed = await Promise.race([socket.closed.then((c) => c), new Promise<null>((r) => setTimeout(() => r(null), 10))]);
    if (closed) throw new Error(`socket closed ${closed.code} ${closed.reason}`);
  }
}

function checkAnswer(s: Sent, a: Answer | undefined): void {
  const what = `mutation ${s.id} (${s.planned.label}): ${JSON.stringify(a)}`;
  assert.ok(a, `no answer for ${what}`);
  assert.ok(a.type === 'ack' || a.type === 'reject', `answered ${a.type}: ${what}`);
  if (s.planned.expect !== 'either') assert.equal(a.type, s.planned.expect, what);
  if (a.type === 'reject') {
    assert.ok(a.status >= 400 && a.status < 500, what);
    assert.match(a.code, /^[a-z_]+$/, what);
    assert.ok(!/\u0000/.test(a.message) && !JSON.stringify(a.errors ?? {}).includes('\\u0000'), `no NUL echoed: ${what}`);
    if (s.planned.label === 'unknown name') assert.equal(a.code, 'unknown_mutation', what);
  }
}

async function patientIds(server: TestServer, user: User): Promise<Set<string>> {
  const rows = await server.runtime.database.db.select({ id: patients.id }).from(patients).where(eq(patients.ownerId, user.uuid));
  return new Set(rows.map((r) => r.id));
}

/** The rows each acked create made exist, the rejected ones made none, and nothing else appeared. */
async function checkApplied(server: TestServer, user: User, before: Set<string>, sent: readonly Sent[], answers: Map<number, Answer>): Promise<Set<string>> {
  const after = await patientIds(server, user);
  const created = [...after].filter((id) => !before.has(id));
  const acked = sent.filter((s) => answers.get(s.id)?.type === 'ack' && s.planned.name === 'patient.create').map((s) => (s.args as { uuid?: string }).uuid);
  for (const id of acked) if (id) assert.ok(after.has(id), `acked create ${id} is stored`);
  const rejected = sent.filter((s) => answers.get(s.id)?.type === 'reject').map((s) => (s.args as { uuid?: unknown } | null)?.uuid);
  for (const id of rejected) if (typeof id === 'string') assert.ok(!after.has(id), `rejected create ${id} is not stored`);
  assert.equal(created.length, acked.length, `exactly the acked creates were applied (${created.length} new rows, ${acked.length} acks)`);
  return after;
}

forEachBackend('sync mutations: one failure is its own', (backend) => {
  let server: TestServer;
  let user: User;
  before(async () => {
    server = await startTestServer(backend);
  });
  beforeEach(async () => {
    user = await utcClinician(server);
  });
  after(() => server.close());

  test('over the socket: fuzzed batches, valid neighbours applied once, bad ones rejected, the next write goes through', async () => {
    const t0 = Date.now();
    const seed = seedOf(`socket [${backend.name}]`);
    await fc.assert(
      // `together`: protocol 5, the batch in `mutations` frames of that many; null: protocol 1, a frame each.
      fc.asyncProperty(batch, fc.option(fc.integer({ min: 1, max: 8 }), { nil: null }), async (plan, together) => {
        const clientId = randomUUID();
        const { socket } = await helloSync(server, user.token, clientId, null, together === null ? 1 : 5);
        const sendAll = (sent: readonly Sent[]) => {
          if (together === null) for (const s of sent) socket.send({ type: 'mutation', ...wire(s) });
          else for (let i = 0; i < sent.length; i += together) socket.send({ type: 'mutations', mutations: sent.slice(i, i + together).map((s) => ({ type: 'mutation', ...wire(s) })) });
        };
        try {
          const sent = built(plan, 1);
          const ids = sent.map((s) => s.id);
          const before = await patientIds(server, user);
          const from = socket.received.length;
          sendAll(sent);
          const answers = await answersOn(socket, from, ids);
          for (const s of sent) checkAnswer(s, answers.get(s.id));
          const afterFirst = await checkApplied(server, user, before, sent, answers);

          // The same frames again (a lost answer, a reconnect): the same answers, nothing applied twice.
          const from2 = socket.received.length;
          sendAll(sent);
          const replayed = await answersOn(socket, from2, ids);
          for (const s of sent) {
            const first = answers.get(s.id) as Answer;
            const again = replayed.get(s.id) as Answer;
            assert.equal(again.type, first.type, `replay of ${s.id} (${s.planned.label})`);
            if (again.type === 'ack') assert.deepEqual(again.result, { duplicate: true });
            if (again.type === 'reject' && first.type === 'reject') assert.deepEqual([again.status, again.code], [first.status, first.code]);
          }
          assert.deepEqual(await patientIds(server, user), afterFirst, 'a replay applies nothing');

          // The device's next write goes through.
          const next = built([fc.sample(validCreate, 1)[0] as Planned], ids.length + 1)[0] as Sent;
          const from3 = socket.received.length;
          socket.send({ type: 'mutation', ...wire(next) });
          const nextAnswer = (await answersOn(socket, from3, [next.id])).get(next.id);
          assert.equal(nextAnswer?.type, 'ack', JSON.stringify(nextAnswer));
        } finally {
          socket.close();
        }
      }),
      { numRuns: RUNS, seed, ...TIME_LIMIT, endOnFailure: true },
    );
    console.log(`# socket [${backend.name}]: ${Date.now() - t0} ms`);
  });

  test('over HTTP: the same batches answer 200 with one result each; never a 5xx for a bad mutation', async () => {
    const t0 = Date.now();
    const seed = seedOf(`http [${backend.name}]`);
    const post = (clientId: string, sent: readonly Sent[]) =>
      server.api('POST', '/sync/mutations', { token: user.token, body: { client_id: clientId, mutations: sent.map(wire) } });
    await fc.assert(
      fc.asyncProperty(batch, async (plan) => {
        const clientId = randomUUID();
        const sent = built(plan, 1);
        const before = await patientIds(server, user);
        const res = await post(clientId, sent);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        const results = res.body.data.results as Answer[];
        assert.equal(results.length, sent.length);
        const answers = new Map(results.map((r) => [r.mutation_id, r]));
        for (const s of sent) checkAnswer(s, answers.get(s.id));
        assert.equal(res.body.data.last_mutation_id, sent.length, 'every mutation was processed');
        const afterFirst = await checkApplied(server, user, before, sent, answers);

        const again = await post(clientId, sent);
        assert.equal(again.status, 200);
        for (const r of again.body.data.results as Answer[]) assert.equal(r.type, answers.get(r.mutation_id)?.type, `replay of ${r.mutation_id}`);
        assert.deepEqual(await patientIds(server, user), afterFirst, 'a replay applies nothing');

        const next = built([fc.sample(validCreate, 1)[0] as Planned], sent.length + 1);
        const n = await post(clientId, next);
        assert.equal(n.status, 200);
        assert.equal((n.body.data.results as Answer[])[0]?.type, 'ack', JSON.stringify(n.body));
      }),
      { numRuns: RUNS, seed, ...TIME_LIMIT, endOnFailure: true },
    );
    console.log(`# http [${backend.name}]: ${Date.now() - t0} ms`);
  });

  test('an oversized mutation is rejected on its own, over the socket (alone or in a mutations frame) and over HTTP', async () => {
    const huge = 'x'.repeat(MAX_MUTATION_BYTES + 10);
    const valid = (id: number): Sent => ({ id, planned: { name: 'patient.create', args: () => null, clientTime: now(), expect: 'ack', label: 'valid' }, args: { ...base(), first_name: 'Big', last_name: 'Neighbour' } });
    const oversized: Sent = { id: 2, planned: { name: 'patient.create', args: () => null, clientTime: now(), expect: 'reject', label: 'oversized' }, args: { ...base(), address: huge } };
    const sent = [valid(1), oversized, valid(3)];

    const { socket } = await helloSync(server, user.token, randomUUID());
    const from = socket.received.length;
    for (const s of sent) socket.send({ type: 'mutation', ...wire(s) });
    const answers = await answersOn(socket, from, [1, 2, 3]);
    assert.deepEqual([1, 2, 3].map((id) => answers.get(id)?.type), ['ack', 'reject', 'ack']);
    const r = answers.get(2);
    assert.ok(r?.type === 'reject' && r.status === 413 && r.code === 'payload_too_large', JSON.stringify(r));
    socket.close();

    // Protocol 5: the same three in one `mutations` frame (within the 4 MiB a frame may be).
    const together = await helloSync(server, user.token, randomUUID(), null, 5);
    const from5 = together.socket.received.length;
    together.socket.send({ type: 'mutations', mutations: [valid(1), oversized, valid(3)].map((s) => ({ type: 'mutation', ...wire(s) })) });
    const answers5 = await answersOn(together.socket, from5, [1, 2, 3]);
    assert.deepEqual([1, 2, 3].map((id) => answers5.get(id)?.type), ['ack', 'reject', 'ack']);
    const r5 = answers5.get(2);
    assert.ok(r5?.type === 'reject' && r5.status === 413 && r5.code === 'payload_too_large', JSON.stringify(r5));
    together.socket.close();

    const res = await server.api('POST', '/sync/mutations', { token: user.token, body: { client_id: randomUUID(), mutations: [valid(1), oversized, valid(3)].map(wire) } });
    assert.equal(res.status, 200, JSON.stringify(res.body).slice(0, 500));
    assert.deepEqual(
      (res.body.data.results as Answer[]).map((a) => (a.type === 'reject' ? `${a.type} ${a.status}` : a.type)),
      ['ack', 'reject 413', 'ack'],
    );
  });

  test('a mutation whose arguments hold `__proto__` and `constructor.prototype` keys is applied alike over the socket and over HTTP, and no prototype is touched', async () => {
    // Both ways in parse with secure-json-parse, dropping such keys; what is left is judged as usual.
    const args = (uuid: string) =>
      `{"__proto__":{"polluted":true},"uuid":"${uuid}","first_name":"Proto","last_name":"Keys","referral":{"constructor":{"prototype":{"x":1}},"discipline":"PT"}}`;
    const socketId = randomUUID();
    const { socket } = await helloSync(server, user.token, randomUUID());
    const from = socket.received.length;
    socket.sendRaw(`{"type":"mutation","mutation_id":1,"name":"patient.create","args":${args(socketId)},"client_time":"${now()}"}`);
    const overSocket = (await answersOn(socket, from, [1])).get(1);
    socket.close();
    const httpId = randomUUID();
    const res = await server.api('POST', '/sync/mutations', {
      token: user.token,
      rawBody: `{"client_id":"${randomUUID()}","mutations":[{"mutation_id":1,"name":"patient.create","args":${args(httpId)},"client_time":"${now()}"}]}`,
    });
    assert.equal(res.status, 200, JSON.stringify(res.body).slice(0, 500));
    const overHttp = (res.body.data.results as Answer[])[0];
    assert.equal(overSocket?.type, 'ack', JSON.stringify(overSocket));
    assert.equal(overHttp?.type, 'ack', JSON.stringify(overHttp));
    const stored = await server.runtime.database.db.select({ id: patients.id }).from(patients).where(eq(patients.ownerId, user.uuid));
    assert.ok(stored.some((r) => r.id === socketId) && stored.some((r) => r.id === httpId), 'both creates stored');
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.equal(({} as Record<string, unknown>).x, undefined);
  });

  test('a device that sends more than the server holds at once (64 MiB) is read more slowly, not dropped: every mutation is answered', async () => {
    // 24 mutations just past the mutation bound, about 75 MB, sent without waiting, then a valid one.
    const huge = 'x'.repeat(MAX_MUTATION_BYTES + 10_000);
    const ids = Array.from({ length: 25 }, (_, i) => i + 1);
    const sent: Sent[] = ids.map((id) =>
      id < 25
        ? { id, planned: { name: 'patient.create', args: () => null, clientTime: now(), expect: 'reject', label: 'oversized' }, args: { ...base(), address: huge } }
        : { id, planned: { name: 'patient.create', args: () => null, clientTime: now(), expect: 'ack', label: 'valid' }, args: { ...base(), first_name: 'After', last_name: 'Backpressure' } },
    );
    const clientId = randomUUID();
    const { socket } = await helloSync(server, user.token, clientId);
    // The server's side of the socket, watched while the frames arrive: it must stop reading
    // (ws `pause()`) once the frames it holds pass the bound, and read again after.
    const { clients } = server.runtime.app.websocketServer;
    let pausedSeen = false;
    const watch = setInterval(() => {
      for (const c of clients) if (c.isPaused) pausedSeen = true;
    }, 1);
    // The device's row held by a transaction of the test's until the server has paused: its
    // first batch waits for it, so the frames pile up whatever the speed of the machine (left
    // alone, a fast server applies them about as fast as they arrive and may never hold 64 MiB).
    let locked!: () => void;
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holding = server.runtime.database.db.transaction(async (tx) => {
      await tx.execute(sql`insert into sync_clients (user_id, client_id) values (${user.uuid}::uuid, ${clientId}::uuid) on conflict do nothing`);
      await tx.execute(sql`select 1 from sync_clients where user_id = ${user.uuid}::uuid and client_id = ${clientId}::uuid for update`);
      locked();
      const deadline = Date.now() + 60_000;
      while (!pausedSeen && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    });
    try {
      await isLocked;
      const from = socket.received.length;
      for (const s of sent) socket.send({ type: 'mutation', ...wire(s) });
      await holding;
      const answers = await answersOn(socket, from, ids, 120_000);
      assert.deepEqual(
        ids.map((id) => { const a = answers.get(id); return a?.type === 'reject' ? `${a.type} ${a.status}` : a?.type; }),
        [...Array.from({ length: 24 }, () => 'reject 413'), 'ack'],
      );
    } finally {
      clearInterval(watch);
    }
    assert.ok(pausedSeen, 'the server stopped reading the socket while it held more than the bound');
    assert.ok([...clients].every((c) => !c.isPaused), 'and reads it again');
    socket.close();
  });

  test('a database error in one mutation rolls back its savepoint only; an unexpected error is retried, then parked as failed', async () => {
    const { services } = server.runtime;
    const real = createMutationRunner({ services, sectionsOf: async () => null });
    // The real services for ordinary mutations; two kinds of trouble inside a mutation's own
    // savepoint, after it wrote something (which must be rolled back with it).
    const runner: Parameters<typeof applyMutationBatch>[1] = async (ctx, name, args) => {
      const kind = (args as { kind?: string }).kind;
      if (kind === undefined) return real(ctx, name, args);
      await real(ctx, name, { ...base(), first_name: 'Rolled', last_name: 'Back', uuid: (args as { uuid: string }).uuid });
      if (kind === 'nul') await services.unitOfWork.db.execute(sql`select ${'a\u0000b'}::text`);
      throw new TypeError('a bug in a service');
    };
    const claims = await services.accessTokens.verify(user.token, new Date());
    assert.ok(claims);
    const device = { userId: user.uuid, sessionId: claims.sessionId, clientId: randomUUID(), organizationId: null, requestIdPrefix: 'test', protocol: 1 };
    const m = (id: number, args: Record<string, unknown>): MutationMessage => ({ type: 'mutation', mutation_id: id, name: 'patient.create', args, client_time: now() });
    const ok = (id: number) => m(id, { ...base(), first_name: 'Ok', last_name: String(id) });
    const nulId = randomUUID();
    const bugId = randomUUID();
    const batchOf = [ok(1), m(2, { kind: 'nul', uuid: nulId }), ok(3), m(4, { kind: 'bug', uuid: bugId }), ok(5)];
    const log = server.runtime.app.log;
    const before = await patientIds(server, user);
    const types = (rs: readonly MutationReply[]) => rs.map((r) => `${r.mutation_id}:${r.type}${r.type === 'reject' ? ` ${r.status} ${r.code}` : ''}`);

    const first = await applyMutationBatch(services, runner, device, batchOf, log);
    assert.equal(first.kind, 'applied');
    if (first.kind !== 'applied') return;
    assert.deepEqual(types(first.replies), ['1:ack', '2:reject 422 invalid_value', '3:ack', '4:retry', '5:retry']);
    assert.equal(first.lastMutationId, 3);
    const stored = await patientIds(server, user);
    const ids = (n: number[]) => n.map((i) => (batchOf[i - 1]?.args as { uuid: string }).uuid);
    assert.deepEqual([...stored].filter((id) => !before.has(id)).sort(), ids([1, 3]).sort(), 'the valid neighbours are stored; the failed ones rolled back');

    // The device resends from 4: retried until the bound, then parked, and 5 goes through.
    let outcome = first;
    for (let attempt = 2; attempt <= MAX_MUTATION_ATTEMPTS; attempt++) {
      const next = await applyMutationBatch(services, runner, device, batchOf.slice(3), log);
      assert.equal(next.kind, 'applied');
      if (next.kind !== 'applied') return;
      outcome = next;
      if (attempt < MAX_MUTATION_ATTEMPTS) assert.deepEqual(types(next.replies), ['4:retry', '5:retry']);
    }
    assert.deepEqual(types(outcome.replies), ['4:failed', '5:ack']);
    assert.equal(outcome.kind === 'applied' && outcome.lastMutationId, 5);
    const parked = outcome.kind === 'applied' ? outcome.replies[0] : null;
    assert.ok(parked?.type === 'failed' && parked.attempts === MAX_MUTATION_ATTEMPTS && parked.code === 'mutation_failed');
    assert.ok(!(await patientIds(server, user)).has(bugId));
    // A replay is answered as the first time: the reject, the failure, the acks.
    const replay = await applyMutationBatch(services, runner, device, batchOf, log);
    assert.deepEqual(replay.kind === 'applied' && types(replay.replies), ['1:ack', '2:reject 422 invalid_value', '3:ack', '4:failed', '5:ack']);
    const [client] = await server.runtime.database.db
      .select()
      .from(syncClients)
      .where(and(eq(syncClients.userId, user.uuid), eq(syncClients.clientId, device.clientId)));
    assert.deepEqual([client?.lastMutationId, client?.failingMutationId, client?.failingAttempts], [5, null, 0]);
  });
});
