/**
 * A transaction whose connection dies while its callback is awaiting other work (a request's
 * transaction when PostgreSQL drops connections). postgres.js rejects the transaction at the
 * close, but the callback runs on: its later statements went to whatever the pool made of
 * that connection next — committed one by one outside any transaction, folded into another
 * request's transaction (and its `commit` committing that one), or, sent while the
 * replacement was still starting, mistaken for the startup's answer, which stalled the
 * connection and every query queued for it (the `database-away` test's rare hang). The
 * patched driver fails them at once (patches/README.md).
 *
 * Each case pauses a transaction's callback, kills its backend, lets the pool reconnect, then
 * lets the callback go on at a chosen moment; one case does the same to a reserved connection
 * (`sql.reserve()`, which holds the migrations' advisory lock). PostgreSQL only: PGlite has no
 * connection to lose.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { openDatabase, rowsOf, type Database, type Db } from '../../server/src/db/database.ts';
import { isDatabaseUnreachable } from '../../server/src/db/reachability.ts';
import { backends, type TestBackend, type TestDatabase } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';

const postgresBackend = backends.find((b) => b.name === 'postgres');
/** Longer than any answer on a loaded machine, far shorter than a hang. */
const SETTLE_MS = 5_000;

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown } | 'pending';

function track(p: Promise<unknown>): { readonly state: Settled; readonly done: Promise<void> } {
  const t: { state: Settled; done: Promise<void> } = { state: 'pending', done: Promise.resolve() };
  t.done = p.then(
    (value) => void (t.state = { ok: true, value }),
    (error: unknown) => void (t.state = { ok: false, error }),
  );
  return t;
}

async function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${SETTLE_MS} ms`)), SETTLE_MS)))]);
  } finally {
    clearTimeout(timer);
  }
}

describe('a transaction that outlives its connection [postgres]', { skip: postgresBackend ? false : 'needs TEST_DATABASE_URL' }, () => {
  let real: TestDatabase;
  let proxy: TcpProxy;
  let database: Database;
  let admin: Db;
  let proxiedUrl: string;

  before(async () => {
    real = await (postgresBackend as TestBackend).open();
    admin = real.database.db;
    await admin.execute(sql`create table lost_tx_probe (v text not null)`);
    proxy = await startTcpProxy(`http://${new URL(real.url as string).host}`);
    const proxied = new URL(real.url as string);
    proxied.host = new URL(proxy.url).host;
    proxiedUrl = proxied.toString();
  });
  after(async () => {
    await proxy?.close();
    await real?.drop();
  });
  // A pool of its own for each case, so one left stalled cannot fail the next.
  beforeEach(async () => {
    await admin.execute(sql`truncate lost_tx_probe`);
    proxy.delay(null);
    proxy.release();
    // One connection: the one the pool makes again is the one the transaction had.
    database = await openDatabase({ kind: 'postgres', url: proxiedUrl, poolSize: 1 });
  });
  afterEach(async () => {
    await database?.close();
  });

  const probeRows = async () => rowsOf<{ v: string }>(await admin.execute(sql`select v from lost_tx_probe order by v`)).map((r) => r.v);

  /**
   * A transaction that writes 'before', then waits for `resume` and writes 'orphan' (and
   * commits, as a callback that returns does). Answers once its backend is gone.
   */
  async function transactionLosingItsConnection() {
    let resume!: () => void;
    const resumed = new Promise<void>((r) => (resume = r));
    let pid = 0;
    let orphan: ReturnType<typeof track> | null = null;
    const transaction = track(
      database.db.transaction(async (tx) => {
        await tx.execute(sql`insert into lost_tx_probe values ('before')`);
        pid = Number(rowsOf<{ pid: number }>(await tx.execute(sql`select pg_backend_pid() as pid`))[0]?.pid);
        await resumed;
        orphan = track(tx.execute(sql`insert into lost_tx_probe values (${'orphan'})`));
        await orphan.done;
      }),
    );
    await eventually(() => assert.ok(pid > 0, 'the transaction has its backend'));
    await admin.execute(sql`select pg_terminate_backend(${pid})`);
    await within(transaction.done, 'the transaction');
    assert.equal(transaction.state !== 'pending' && transaction.state.ok, false, 'the transaction fails with its connection');
    return {
      resume,
      /** The callback's statement after the loss: failed at once, as a lost connection. */
      async orphanFailed() {
        await eventually(() => assert.ok(orphan, 'the callback went on'));
        const o = orphan as unknown as ReturnType<typeof track>;
        await within(o.done, "the callback's statement after the loss");
        const state = o.state as Exclude<Settled, 'pending'>;
        assert.equal(state.ok, false, "the callback's statement after the loss does not run");
        assert.ok(!state.ok && isDatabaseUnreachable(state.error), `failed as a lost connection (503): ${String(!state.ok && state.error)}`);
      },
    };
  }

  /** A pool query sent once the proxy holds every new connection's bytes. */
  function waitingBehindHeldProxy(query: () => Promise<unknown>) {
    proxy.delay(() => true);
    const stalledBefore = proxy.stalled;
    return { waiting: track(query()), reconnected: () => eventually(() => assert.ok(proxy.stalled > stalledBefore, 'the pool opened its connection again')) };
  }

  /** The query that waited for the connection: answered, not failed in the late callback's place. */
  async function answered(waiting: ReturnType<typeof track>, what: string): Promise<unknown> {
    await within(waiting.done, what);
    const state = waiting.state as Exclude<Settled, 'pending'>;
    assert.ok(state.ok, `${what} is answered: ${String(!state.ok && state.error)}`);
    return state.value;
  }

  async function poolStillServes() {
    const rows = rowsOf<{ n: number }>(await within(database.db.execute(sql`select 41 + 1 as n`), 'a query after'));
    assert.equal(rows[0]?.n, 42);
  }

  test('the callback goes on after the pool has reconnected: its statement fails and nothing is committed', async () => {
    const lost = await transactionLosingItsConnection();
    await poolStillServes();
    lost.resume();
    await lost.orphanFailed();
    assert.deepEqual(await probeRows(), [], 'neither the rolled-back write nor the late one is in the table');
    await poolStillServes();
  });

  test('the callback goes on while the replacement connection starts up: the waiting query is answered, nothing stalls', async () => {
    const lost = await transactionLosingItsConnection();
    // The new connection's bytes wait in the proxy: its startup is out, its answer not in.
    const { waiting, reconnected } = waitingBehindHeldProxy(() => database.db.execute(sql`select 7 as seven`));
    await reconnected();
    lost.resume();
    await lost.orphanFailed();
    proxy.release();
    assert.equal(rowsOf<{ seven: number }>(await answered(waiting, 'the query waiting for the connection'))[0]?.seven, 7);
    assert.deepEqual(await probeRows(), []);
    await poolStillServes();
  });

  test('the callback goes on before the replacement connects: the query waiting for it is not failed in its place', async () => {
    const lost = await transactionLosingItsConnection();
    const { waiting, reconnected } = waitingBehindHeldProxy(() => database.db.execute(sql`select 8 as eight`));
    // At once, while the pool is (re)connecting for the waiting query.
    lost.resume();
    await lost.orphanFailed();
    await reconnected();
    proxy.release();
    assert.equal(rowsOf<{ eight: number }>(await answered(waiting, 'the query waiting for the connection'))[0]?.eight, 8);
    assert.deepEqual(await probeRows(), []);
    await poolStillServes();
  });

  test("the callback goes on while another transaction has the connection: it neither writes into that one nor commits it", async () => {
    const lost = await transactionLosingItsConnection();
    let finish!: () => void;
    const finishing = new Promise<void>((r) => (finish = r));
    let inside = false;
    const other = track(
      database.db.transaction(async (tx) => {
        await tx.execute(sql`insert into lost_tx_probe values ('other')`);
        inside = true;
        await finishing;
        throw new Error('the other transaction rolls back');
      }),
    );
    await eventually(() => assert.ok(inside, 'the other transaction is open on the replacement connection'));
    lost.resume();
    await lost.orphanFailed();
    assert.deepEqual(await probeRows(), [], 'nothing committed while the other transaction is open');
    finish();
    await within(other.done, 'the other transaction');
    const state = other.state as Exclude<Settled, 'pending'>;
    assert.ok(!state.ok && String(state.error).includes('rolls back'), `the other transaction ends as its callback said: ${String(!state.ok && state.error)}`);
    assert.deepEqual(await probeRows(), [], "the other transaction's write was rolled back, not committed by the late callback");
    await poolStillServes();
  });

  test("a reserved connection (the migrations' lock) that loses its backend: its next query fails instead of taking the lock on a pool connection, and releasing it leaves the pool serving", async () => {
    const client = database.sql as NonNullable<Database['sql']>;
    const reserved = await client.reserve();
    const pid = Number((await reserved`select pg_backend_pid() as pid`)[0]?.pid);
    await admin.execute(sql`select pg_terminate_backend(${pid})`);
    // The pool makes its one connection again for its own query.
    await poolStillServes();
    const key = Math.floor(Math.random() * 1_000_000) + 1;
    const late = await reserved`select pg_advisory_lock(${key})`.then(
      () => null,
      (err: unknown) => err,
    );
    assert.ok(late && isDatabaseUnreachable(late), `the reserved connection's query after the loss fails as a lost connection: ${String(late)}`);
    const held = rowsOf<{ n: number }>(await admin.execute(sql`select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = ${key}`));
    assert.equal(held[0]?.n, 0, 'no session holds the lock: it was not taken on the connection the pool made again');
    reserved.release();
    await Promise.all([poolStillServes(), poolStillServes(), poolStillServes()]);
  });

  test('whenever the callback goes on (every 4 ms from the loss to 80 ms after), nothing is committed and nothing hangs', async () => {
    for (let delay = 0; delay <= 80; delay += 4) {
      await admin.execute(sql`truncate lost_tx_probe`);
      const lost = await transactionLosingItsConnection();
      const waiting = track(database.db.execute(sql`select ${delay}::int as delay`));
      setTimeout(lost.resume, delay);
      await lost.orphanFailed();
      await answered(waiting, `the waiting query (callback on after ${delay} ms)`);
      assert.deepEqual(await probeRows(), [], `callback on after ${delay} ms`);
      await poolStillServes();
    }
  });
});
