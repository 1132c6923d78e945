/**
 * The pokes a write sends (migration 0028: once per statement and owner, not once per row),
 * read by a real LISTEN on each backend: every owner of a row a statement inserts, updates or
 * deletes gets `<owner>:<table>`, a row that leaves its owner pokes the previous owner bare
 * (the full diff), a statement that changes nothing pokes nobody, a transaction's pokes
 * collapse, and a rollback sends none.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { forEachBackend } from '../../helpers/backends.ts';
import { startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { createPatient, scheduleVisit, utcClinician, type User } from '../visits/visit-fixtures.ts';

const CHANNEL = 'fieldchart_sync';
const END = 'end-of-test-transaction';

forEachBackend('sync: the pokes a write sends', (backend) => {
  let server: TestServer;
  let a: User;
  let b: User;
  let visitsOfA: string[];
  let visitOfB: string;
  let patientOfA: string;
  before(async () => {
    server = await startTestServer(backend);
    [a, b] = [await utcClinician(server), await utcClinician(server)];
    const pa = await createPatient(server, a);
    const pb = await createPatient(server, b);
    patientOfA = pa.uuid;
    visitsOfA = [
      await scheduleVisit(server, a, { patient_uuid: pa.uuid, visit_date: '2026-11-20', start_time: '09:00' }),
      await scheduleVisit(server, a, { patient_uuid: pa.uuid, visit_date: '2026-11-20', start_time: '11:00' }),
    ];
    visitOfB = await scheduleVisit(server, b, { patient_uuid: pb.uuid, visit_date: '2026-11-20', start_time: '10:00' });
  });
  after(() => server.close());

  /** The pokes `work` sends, in the order they arrive, read up to a marker sent after it. */
  async function pokesOf(work: () => Promise<unknown>): Promise<string[]> {
    const { database } = server.runtime;
    const got: string[] = [];
    let ended!: () => void;
    const end = new Promise<void>((resolve) => (ended = resolve));
    const onPayload = (payload: string) => (payload === END ? ended() : got.push(payload));
    let unlisten: () => Promise<void>;
    if (database.sql) unlisten = (await database.sql.listen(CHANNEL, onPayload)).unlisten;
    else if (database.pglite) unlisten = await database.pglite.listen(CHANNEL, onPayload);
    else throw new Error('no database to listen on');
    try {
      await work();
      // Notifications of transactions that committed one after the other arrive in that order.
      await server.runtime.services.unitOfWork.db.execute(sql`select pg_notify(${CHANNEL}, ${END})`);
      await end;
    } finally {
      await unlisten();
    }
    return got;
  }
  const db = () => server.runtime.services.unitOfWork.db;
  // One bound parameter, an array literal (as the sync ledger sends its ids).
  const uuids = (ids: readonly string[]) => sql`${`{${ids.join(',')}}`}::uuid[]`;

  test('rows of one owner inserted by one statement: one poke of their table', async () => {
    const pokes = await pokesOf(() =>
      db().execute(sql`
        insert into timer_events (visit_id, owner_id, event_type, event_time)
        select v, ${a.uuid}::uuid, 'start_travel', now() from unnest(${uuids(visitsOfA)}) as v`),
    );
    assert.deepEqual(pokes, [`${a.uuid}:timer_events`]);
  });

  test('one statement updating rows of two owners pokes each owner once', async () => {
    const pokes = await pokesOf(() => db().execute(sql`update visits set updated_at = now() where id = any(${uuids([...visitsOfA, visitOfB])})`));
    assert.deepEqual(pokes.sort(), [`${a.uuid}:visits`, `${b.uuid}:visits`].sort());
  });

  test('a row that leaves its owner pokes the new owner with its table and the previous one bare', async () => {
    const pokes = await pokesOf(() => db().execute(sql`update patients set owner_id = ${b.uuid}::uuid where id = ${patientOfA}::uuid`));
    assert.deepEqual(pokes.sort(), [a.uuid, `${b.uuid}:patients`].sort());
    // And back, for the tests after this one.
    const back = await pokesOf(() => db().execute(sql`update patients set owner_id = ${a.uuid}::uuid where id = ${patientOfA}::uuid`));
    assert.deepEqual(back.sort(), [b.uuid, `${a.uuid}:patients`].sort());
  });

  test('deleted rows poke their owner; a statement that changes no row pokes nobody', async () => {
    const deleted = await pokesOf(() => db().execute(sql`delete from timer_events where visit_id = any(${uuids(visitsOfA)})`));
    assert.deepEqual(deleted, [`${a.uuid}:timer_events`]);
    const none = await pokesOf(() => db().execute(sql`update visit_mileage set total_miles = total_miles where visit_id = any(${uuids(visitsOfA)})`));
    assert.deepEqual(none, []);
  });

  test('a transaction’s pokes collapse to one per owner and table, and leave at its commit; a rollback sends none', async () => {
    const committed = await pokesOf(() =>
      server.runtime.services.unitOfWork.transaction(async (tx) => {
        await tx.execute(sql`update visits set updated_at = now() where id = ${visitsOfA[0] as string}::uuid`);
        await tx.execute(sql`update visits set updated_at = now() where id = ${visitsOfA[1] as string}::uuid`);
        await tx.execute(sql`update patients set updated_at = now() where id = ${patientOfA}::uuid`);
      }),
    );
    assert.deepEqual(committed.sort(), [`${a.uuid}:patients`, `${a.uuid}:visits`]);
    const rolledBack = await pokesOf(() =>
      server.runtime.services.unitOfWork
        .transaction(async (tx) => {
          await tx.execute(sql`update visits set updated_at = now() where id = ${visitOfB}::uuid`);
          throw new Error('rolled back on purpose');
        })
        .catch(() => {}),
    );
    assert.deepEqual(rolledBack, []);
  });
});
