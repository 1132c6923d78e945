/**
 * A cloned install (docs/sync-protocol.md, Versioning): two phones with one client id send
 * different content under the same mutation ids. On protocol 2 the second is answered
 * `conflict` — not applied, not stored, not counted — and the same content is a duplicate as
 * ever; on protocol 1 both are duplicates, as before. Over raw sockets and over HTTP, on both
 * databases; nothing is applied twice.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { forEachBackend } from '../../helpers/backends.ts';
import { helloSync, type SyncSocket } from '../../helpers/sync-socket.ts';
import { startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { utcClinician, type User } from '../visits/visit-fixtures.ts';

interface Sent {
  readonly mutation_id: number;
  readonly name: string;
  readonly args: Record<string, unknown>;
}

type Answer = { type: string; mutation_id: number; code?: string; result?: unknown };

forEachBackend('sync: a cloned install', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  const create = (id: number, first: string, uuid = randomUUID()): Sent => ({ mutation_id: id, name: 'patient.create', args: { uuid, first_name: first, last_name: 'Clone' } });
  /** Refused by the rules (no such patient): processed, kept as a reject. */
  const refused = (id: number, patientUuid = randomUUID()): Sent => ({
    mutation_id: id,
    name: 'visit.schedule',
    args: { patient_uuid: patientUuid, visit_date: new Date().toISOString().slice(0, 10), start_time: '08:00' },
  });

  /** Rows of a query on either driver (PGlite answers `{ rows }`, postgres.js an array). */
  async function select(query: ReturnType<typeof sql>): Promise<Array<Record<string, unknown>>> {
    const result = await server.runtime.database.db.execute(query);
    return (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Array<Record<string, unknown>>;
  }
  const rows = async (user: User) => (await select(sql`select id from patients where owner_id = ${user.uuid} order by id`)).map((r) => String(r.id));
  const lastOf = async (user: User, clientId: string) =>
    Number((await select(sql`select last_mutation_id from sync_clients where user_id = ${user.uuid} and client_id = ${clientId}`))[0]?.last_mutation_id ?? 0);

  /** One phone's drain: over a socket or over HTTP, saying `protocol`; the answers in order. */
  async function phone(user: User, clientId: string, via: 'socket' | 'http', protocol: number, sent: readonly Sent[]): Promise<Answer[]> {
    const client_time = new Date().toISOString();
    if (via === 'http') {
      const res = await server.api('POST', '/sync/mutations', {
        token: user.token,
        body: { client_id: clientId, ...(protocol === 1 ? {} : { protocol }), mutations: sent.map((m) => ({ ...m, client_time })) },
      });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.data.results as Answer[];
    }
    const { socket, welcome } = await helloSync(server, user.token, clientId, null, protocol);
    assert.equal(welcome.protocol, protocol);
    try {
      for (const m of sent) socket.send({ type: 'mutation', ...m, client_time });
      const answers: Answer[] = [];
      for (const m of sent) answers.push(await answerOf(socket, m.mutation_id));
      return answers;
    } finally {
      socket.close();
    }
  }

  const answerOf = (socket: SyncSocket, id: number): Promise<Answer> =>
    Promise.race(
      (['ack', 'reject', 'conflict', 'retry', 'failed'] as const).map((type) => socket.next(type, (m) => m.mutation_id === id) as Promise<Answer>),
    );

  const summary = (answers: readonly Answer[]) =>
    answers.map((a) => `${a.mutation_id}:${a.type}${a.code ? ` ${a.code}` : ''}${a.type === 'ack' && (a.result as { duplicate?: boolean } | null)?.duplicate ? ' duplicate' : ''}`);

  for (const via of ['socket', 'http'] as const) {
    test(`over ${via}, protocol 2: other content under a processed id is a conflict, the same content a duplicate`, async () => {
      const user = await utcClinician(server);
      const clientId = randomUUID();
      const a = [create(1, 'Ann'), refused(2), create(3, 'Ava')];
      assert.deepEqual(summary(await phone(user, clientId, via, 2, a)), ['1:ack', '2:reject unknown_patient', '3:ack']);
      const applied = await rows(user);
      assert.equal(applied.length, 2);

      // The restored backup: the same ids, other content (a new patient, another refusal, and
      // the first patient's create again with its keys in another order: the same content).
      const sameAsA1 = { mutation_id: 1, name: 'patient.create', args: Object.fromEntries(Object.entries(a[0]?.args ?? {}).reverse()) };
      const b = [sameAsA1, refused(2), create(3, 'Bea'), create(4, 'Bo')];
      assert.deepEqual(summary(await phone(user, clientId, via, 2, b)), [
        '1:ack duplicate',
        '2:conflict client_id_reused',
        '3:conflict client_id_reused',
        '4:ack',
      ]);
      assert.equal(await lastOf(user, clientId), 4);
      assert.equal((await rows(user)).length, 3, 'Bea was not applied; Bo was, once');

      // Phone A replaying its own (a lost answer) still gets what it got the first time.
      assert.deepEqual(summary(await phone(user, clientId, via, 2, a)), ['1:ack duplicate', '2:reject unknown_patient', '3:ack duplicate']);

      // Phone B re-keyed: Bea under a new client id is applied, once, even when sent twice.
      const rekeyed = randomUUID();
      const bea = { ...create(1, 'Bea'), args: b[2]?.args ?? {} };
      assert.deepEqual(summary(await phone(user, rekeyed, via, 2, [bea])), ['1:ack']);
      assert.deepEqual(summary(await phone(user, rekeyed, via, 2, [bea])), ['1:ack duplicate']);
      assert.equal((await rows(user)).length, 4);
    });

    test(`over ${via}, protocol 1: other content under a processed id is answered as before (a duplicate), not applied`, async () => {
      const user = await utcClinician(server);
      const clientId = randomUUID();
      assert.deepEqual(summary(await phone(user, clientId, via, 1, [create(1, 'Cy'), refused(2)])), ['1:ack', '2:reject unknown_patient']);
      assert.deepEqual(summary(await phone(user, clientId, via, 1, [create(1, 'Di'), refused(2), create(3, 'Ed')])), [
        '1:ack duplicate',
        '2:reject unknown_patient',
        '3:ack',
      ]);
      assert.equal((await rows(user)).length, 2);
      assert.equal(await lastOf(user, clientId), 3);
    });
  }

  test('a batch keeps its digests in one row: a replay is judged at any place of a run, and across runs', async () => {
    const user = await utcClinician(server);
    const clientId = randomUUID();
    const first = [1, 2, 3, 4, 5].map((id) => create(id, `Run${id}`));
    const second = [6, 7, 8].map((id) => create(id, `Run${id}`));
    assert.deepEqual(summary(await phone(user, clientId, 'http', 2, first)), ['1:ack', '2:ack', '3:ack', '4:ack', '5:ack']);
    assert.deepEqual(summary(await phone(user, clientId, 'http', 2, second)), ['6:ack', '7:ack', '8:ack']);
    const runs = async () =>
      (await select(sql`select first_mutation_id as a, last_mutation_id as b, array_to_string(mutation_ids, ',') as ids, length(digests) as chars from sync_mutation_digest_runs where user_id = ${user.uuid} and client_id = ${clientId} order by 1`)).map(
        (r) => `${r.a}-${r.b} [${r.ids}] ${r.chars}`,
      );
    assert.deepEqual(await runs(), ['1-5 [1,2,3,4,5] 320', '6-8 [6,7,8] 192']);

    // The first, a middle and the last of one run, and ids of both runs in one batch; new 9 after them.
    const other = (m: Sent): Sent => ({ ...m, args: { ...m.args, first_name: 'Other' } });
    const replay = [first[0], other(first[2] as Sent), first[4], other(second[0] as Sent), second[2], create(9, 'Run9')] as Sent[];
    assert.deepEqual(summary(await phone(user, clientId, 'http', 2, replay)), [
      '1:ack duplicate',
      '3:conflict client_id_reused',
      '5:ack duplicate',
      '6:conflict client_id_reused',
      '8:ack duplicate',
      '9:ack',
    ]);
    assert.deepEqual(await runs(), ['1-5 [1,2,3,4,5] 320', '6-8 [6,7,8] 192', '9-9 [9] 64'], 'the replayed ids wrote nothing, 9 a run of its own');
    // A run whose lowest replayed id is not its first: found by the run that holds it.
    assert.deepEqual(summary(await phone(user, clientId, 'socket', 2, [other(first[3] as Sent), second[1] as Sent])), ['4:conflict client_id_reused', '7:ack duplicate']);
    assert.equal((await rows(user)).length, 9);
  });

  test('an id processed before digests were kept is a duplicate, on protocol 2 too; pruning keeps digests as long as refusals', async () => {
    const user = await utcClinician(server);
    const clientId = randomUUID();
    const db = server.runtime.database.db;
    assert.deepEqual(summary(await phone(user, clientId, 'socket', 2, [create(1, 'Flo'), create(2, 'Gus')])), ['1:ack', '2:ack']);
    const digests = async () =>
      (await select(sql`select unnest(mutation_ids) as mutation_id from sync_mutation_digest_runs where user_id = ${user.uuid} and client_id = ${clientId} order by 1`)).map((r) =>
        Number(r.mutation_id),
      );
    assert.deepEqual(await digests(), [1, 2]);
    // As a mutation processed before digests were kept: none for 1 (whether its batch was 1 alone or 1 and 2).
    await db.execute(sql`delete from sync_mutation_digest_runs where user_id = ${user.uuid} and client_id = ${clientId} and mutation_ids = '{1}'`);
    await db.execute(sql`
      update sync_mutation_digest_runs set first_mutation_id = 2, mutation_ids = '{2}', digests = right(digests, 64)
      where user_id = ${user.uuid} and client_id = ${clientId} and mutation_ids = '{1,2}'`);
    assert.deepEqual(await digests(), [2]);
    assert.deepEqual(summary(await phone(user, clientId, 'http', 2, [create(1, 'Hal'), create(2, 'Ida')])), ['1:ack duplicate', '2:conflict client_id_reused']);
    assert.equal((await rows(user)).length, 2);

    // The hourly cleanup drops digests past the refusals' retention, and only those.
    await db.execute(sql`update sync_mutation_digest_runs set created_at = now() - interval '31 days' where user_id = ${user.uuid} and client_id = ${clientId}`);
    const purged = await server.runtime.services.maintenance.purgeExpired();
    assert.ok((purged.sync_mutation_digests ?? 0) >= 1);
    assert.deepEqual(await digests(), []);
    assert.deepEqual(summary(await phone(user, clientId, 'http', 2, [create(2, 'Ida')])), ['2:ack duplicate']);
  });
});
