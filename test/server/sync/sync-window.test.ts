/**
 * Protocol 3's window (docs/sync-protocol.md, Versioning and Limits): `welcome.max_in_flight`
 * tells the device how many mutations it may keep unanswered (500 on PGlite's one session,
 * 2,000 on PostgreSQL; 100 on protocols 1 and 2, whose welcome does not carry the field). A device that sends its whole window at once —
 * more than one transaction's worth — has every mutation answered once, in order, each refusal
 * its own, and a replay of the window on a new socket changes nothing.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { CLOSE_CODES, MAX_MUTATIONS_PER_FRAME, type ServerMessage } from '@fieldchart/schema/sync';
import { forEachBackend } from '../../helpers/backends.ts';
import { eventually } from '../../helpers/eventually.ts';
import { helloSync, nextFeed, type SyncSocket } from '../../helpers/sync-socket.ts';
import { startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { utcClinician } from '../visits/visit-fixtures.ts';

type Row = Record<string, unknown>;
const rowsOf = (r: unknown): Row[] => (Array.isArray(r) ? (r as Row[]) : ((r as { rows?: Row[] }).rows ?? []));
type Answer = Extract<ServerMessage, { type: 'ack' | 'reject' | 'retry' | 'failed' | 'conflict' }>;
const ANSWERS: ReadonlySet<string> = new Set(['ack', 'reject', 'retry', 'failed', 'conflict']);

forEachBackend('sync window (protocol 3)', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  const count = async (sqlText: ReturnType<typeof sql>) => Number(rowsOf(await server.runtime.services.unitOfWork.db.execute(sqlText))[0]?.n);

  /** The answers received after `from`, in arrival order, once there are `n`. */
  const answers = (socket: SyncSocket, from: number, n: number): Promise<Answer[]> =>
    eventually(
      () => {
        const got = socket.received.slice(from).filter((m): m is Answer => ANSWERS.has(m.type));
        assert.ok(got.length >= n, `${got.length} of ${n} answers`);
        return got;
      },
      { timeoutMs: 120_000, intervalMs: 50 },
    );

  test('welcome announces the window from protocol 3 on', async () => {
    const user = await utcClinician(server);
    for (const protocol of [1, 2]) {
      const { socket, welcome } = await helloSync(server, user.token, randomUUID(), null, protocol);
      assert.equal(welcome.protocol, protocol);
      assert.equal(welcome.max_in_flight, undefined, `protocol ${protocol} keeps its welcome`);
      socket.close();
    }
    for (const protocol of [3, 4, 5]) {
      const { socket, welcome } = await helloSync(server, user.token, randomUUID(), null, protocol);
      assert.equal(welcome.protocol, protocol);
      // A database of one session (PGlite) keeps transactions short: every other request waits behind each.
      assert.equal(welcome.max_in_flight, backend.name === 'pglite' ? 500 : 2000);
      socket.close();
    }
  });

  test('protocol 4: the answers of a window come gathered in `answers` frames, the same answers in the same order as protocol 3 sends one by one', async () => {
    const user = await utcClinician(server);
    const sendWindow = async (protocol: number) => {
      const { socket, welcome } = await helloSync(server, user.token, randomUUID(), null, protocol);
      await nextFeed(socket);
      // More than one frame of answers (500), within the window (500 on PGlite, 2,000 on PostgreSQL).
      const window = Math.min(welcome.max_in_flight ?? 0, 1200);
      const mark = socket.received.length;
      for (let i = 1; i <= window; i++) {
        socket.send({
          type: 'mutation',
          mutation_id: i,
          // Two updates of a patient that does not exist: refused on their own (404) between
          // acknowledged creates. (A refused create would send its whole run one by one.)
          ...(i === 7 || i === window - 3
            ? { name: 'patient.update', args: { uuid: randomUUID(), first_name: 'Nobody' } }
            : { name: 'patient.create', args: { uuid: randomUUID(), first_name: `P${protocol}x${i}`, last_name: 'Window' } }),
          client_time: new Date().toISOString(),
        });
      }
      const frames = await eventually(
        () => {
          const got = socket.received.slice(mark).filter((m) => m.type === 'answers' || ANSWERS.has(m.type));
          const n = got.reduce((sum, m) => sum + (m.type === 'answers' ? m.answers.length : 1), 0);
          assert.ok(n >= window, `${n} of ${window} answers`);
          return got;
        },
        { timeoutMs: 120_000, intervalMs: 50 },
      );
      socket.close();
      return { window, frames };
    };
    const three = await sendWindow(3);
    const four = await sendWindow(4);
    assert.ok(three.frames.every((f) => f.type !== 'answers'), 'protocol 3: one frame per answer');
    assert.ok(four.frames.every((f) => f.type === 'answers' && f.answers.length <= 500), 'protocol 4: answers gathered, at most 500 to a frame');
    assert.ok(four.frames.length <= Math.ceil(four.window / 500) + 4, `${four.frames.length} frames for ${four.window} answers`);
    const flat = (frames: ServerMessage[]) =>
      frames.flatMap((f) => (f.type === 'answers' ? f.answers : [f as Answer])).map((a) => `${a.mutation_id} ${a.type}${a.type === 'reject' ? ` ${a.status} ${a.code}` : ''}`);
    assert.deepEqual(flat(four.frames), flat(three.frames));
  });

  test('protocol 5: a window sent in `mutations` frames is answered as the same mutations sent one frame each, each fault its own', async () => {
    const user = await utcClinician(server);
    /** The window's mutations of one device: creates, with an unknown name, bad arguments, a bad client_time and a refused update among them. */
    const mutationsOf = (protocol: number, window: number) =>
      Array.from({ length: window }, (_, k) => {
        const i = k + 1;
        const base = { type: 'mutation', mutation_id: i, client_time: new Date().toISOString() };
        if (i === 3) return { ...base, name: 'patient.teleport', args: {} };
        if (i === 9) return { ...base, name: 'patient.create', args: 'not an object' };
        if (i === 11) return { ...base, name: 'patient.create', args: { uuid: randomUUID(), first_name: 'Bad', last_name: 'Time' }, client_time: 'yesterday' };
        if (i === window - 2) return { ...base, name: 'patient.update', args: { uuid: randomUUID(), first_name: 'Nobody' } };
        return { ...base, name: 'patient.create', args: { uuid: randomUUID(), first_name: `P${protocol}x${i}`, last_name: 'Together' } };
      });
    const flat = (got: Answer[]) => got.map((a) => `${a.mutation_id} ${a.type}${a.type === 'reject' ? ` ${a.status} ${a.code}` : ''}`);
    const sendWindow = async (protocol: number) => {
      const clientId = randomUUID();
      const { socket, welcome } = await helloSync(server, user.token, clientId, null, protocol);
      await nextFeed(socket);
      const window = Math.min(welcome.max_in_flight ?? 0, 1200);
      const mutations = mutationsOf(protocol, window);
      const mark = socket.received.length;
      if (protocol < 5) for (const m of mutations) socket.send(m);
      else {
        // Frames of 1, 7, 292 and the rest: a frame's mutations may share a transaction with
        // another frame's, or be cut by one (250 to a transaction on PGlite, 1,000 on PostgreSQL).
        for (const [from, to] of [[0, 1], [1, 8], [8, 300], [300, window]] as const) socket.send({ type: 'mutations', mutations: mutations.slice(from, to) });
      }
      const got = await eventually(
        () => {
          const list = socket.received.slice(mark).flatMap((m) => (m.type === 'answers' ? m.answers : ANSWERS.has(m.type) ? [m as Answer] : []));
          assert.ok(list.length >= window, `${list.length} of ${window} answers`);
          return list;
        },
        { timeoutMs: 120_000, intervalMs: 50 },
      );
      const last = await count(sql`select last_mutation_id::int as n from sync_clients where user_id = ${user.uuid}::uuid and client_id = ${clientId}::uuid`);
      socket.close();
      return { window, got, last };
    };
    const before = await count(sql`select count(*)::int as n from patients where owner_id = ${user.uuid}::uuid`);
    const four = await sendWindow(4);
    const five = await sendWindow(5);
    assert.equal(five.window, four.window);
    assert.deepEqual(flat(five.got), flat(four.got), 'the same answers, in the same order');
    assert.equal(five.got.length, five.window, 'each mutation answered once');
    const rejected = five.got.filter((a) => a.type === 'reject').map((a) => a.mutation_id);
    assert.deepEqual(rejected, [3, 9, 11, five.window - 2]);
    assert.equal(five.last, five.window);
    const after = await count(sql`select count(*)::int as n from patients where owner_id = ${user.uuid}::uuid`);
    assert.equal(after - before, 2 * (five.window - 4), 'each protocol created the same patients');
  });

  test('a `mutations` frame that is malformed, too long or sent on protocol 4 closes the socket (4400) and applies nothing', async () => {
    const user = await utcClinician(server);
    const mutation = (i: number) => ({ type: 'mutation', mutation_id: i, name: 'patient.create', args: { uuid: randomUUID(), first_name: 'Never', last_name: 'Applied' }, client_time: new Date().toISOString() });
    const cases: Array<[string, number, unknown]> = [
      ['on protocol 4', 4, { type: 'mutations', mutations: [mutation(1), mutation(2)] }],
      ['empty', 5, { type: 'mutations', mutations: [] }],
      ['not a list', 5, { type: 'mutations', mutations: mutation(1) }],
      ['an item without an id', 5, { type: 'mutations', mutations: [mutation(1), { ...mutation(2), mutation_id: undefined }] }],
      ['an item that is not a mutation', 5, { type: 'mutations', mutations: [mutation(1), { type: 'doc_close', doc: `visit/${randomUUID()}/soap` }] }],
      ['more than the most to a frame', 5, { type: 'mutations', mutations: Array.from({ length: MAX_MUTATIONS_PER_FRAME + 1 }, (_, k) => mutation(k + 1)) }],
    ];
    for (const [what, protocol, frame] of cases) {
      const clientId = randomUUID();
      const { socket } = await helloSync(server, user.token, clientId, null, protocol);
      socket.send(frame);
      assert.equal((await socket.closed).code, CLOSE_CODES.bad_message, what);
      const seen = await count(sql`select count(*)::int as n from sync_clients where user_id = ${user.uuid}::uuid and client_id = ${clientId}::uuid and last_mutation_id > 0`);
      assert.equal(seen, 0, `${what}: nothing applied`);
    }
    assert.equal(await count(sql`select count(*)::int as n from patients where owner_id = ${user.uuid}::uuid`), 0);
  });

  test('a whole window sent at once is answered once, in order, a refusal its own; replayed, nothing changes', async () => {
    const user = await utcClinician(server);
    const clientId = randomUUID();
    const { socket, welcome } = await helloSync(server, user.token, clientId, null, 3);
    const window = welcome.max_in_flight ?? 0;
    assert.ok(window >= 500, 'the window is more than one transaction (half of it)');
    await nextFeed(socket);
    const refused = 137;
    const ids = Array.from({ length: window }, () => randomUUID());
    const frames = ids.map((uuid, i) => ({
      type: 'mutation',
      mutation_id: i + 1,
      name: 'patient.create',
      // One without a last name: refused by the rules, in the middle of a set.
      args: i + 1 === refused ? { uuid, first_name: 'Nolast' } : { uuid, first_name: `Window${i}`, last_name: 'Patient' },
      client_time: new Date().toISOString(),
    }));
    const mark = socket.received.length;
    for (const f of frames) socket.send(f);
    const got = await answers(socket, mark, window);
    assert.deepEqual(
      got.map((a) => a.mutation_id),
      frames.map((f) => f.mutation_id),
      'every mutation answered once, in id order',
    );
    for (const a of got) assert.equal(a.type, a.mutation_id === refused ? 'reject' : 'ack', `mutation ${a.mutation_id}`);
    const created = sql`select count(*)::int as n from patients where owner_id = ${user.uuid}::uuid`;
    assert.equal(await count(created), window - 1);
    assert.equal(await count(sql`select last_mutation_id::int as n from sync_clients where user_id = ${user.uuid}::uuid and client_id = ${clientId}::uuid`), window);
    socket.close();

    // The answers were lost: the device sends the window again on a new socket.
    const again = await helloSync(server, user.token, clientId, null, 3);
    assert.equal(again.welcome.last_mutation_id, window);
    const mark2 = again.socket.received.length;
    for (const f of frames) again.socket.send(f);
    const replayed = await answers(again.socket, mark2, window);
    assert.deepEqual(
      replayed.map((a) => a.mutation_id),
      frames.map((f) => f.mutation_id),
    );
    for (const a of replayed) {
      if (a.mutation_id === refused) assert.equal(a.type, 'reject');
      else assert.deepEqual(a.type === 'ack' ? a.result : a, { duplicate: true });
    }
    assert.equal(await count(created), window - 1, 'nothing applied twice');
    again.socket.close();
  });
});
