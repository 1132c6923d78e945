import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Logger, run, runMigrations } from 'graphile-worker';
import type { Runner, RunnerOptions, TaskList, WorkerEvents } from 'graphile-worker';
import { PglitePgPool, unlockDeadWorkers } from '../../server/src/db/pglite-pg-pool.ts';
import type { PglitePgClient } from '../../server/src/db/pglite-pg-pool.ts';
import { PgliteThread, removeStaleCompiled, type EmbeddedPglite } from '../../server/src/db/pglite-thread-client.ts';

// One PGlite for the whole file: initdb alone takes 2–5 s. On its own thread, as the server
// opens it (db/database.ts).
let db: EmbeddedPglite;
let pool: PglitePgPool;
let runner: Runner | null = null;
let unlockedBeforeMigrations = -1;
let migrationMs = 0;

interface Ran {
  payload: unknown;
  at: number;
  attempts: number;
}
const ran = new Map<string, Ran[]>();
let burstDone = 0;
let incrementsInFlight = 0;
let maxIncrementsInFlight = 0;
let incrementsDone = 0;
const unexpectedErrors: string[] = [];

function markerOf(payload: unknown): string {
  if (typeof payload === 'object' && payload !== null && 'marker' in payload && typeof payload.marker === 'string') {
    return payload.marker;
  }
  throw new Error(`payload without marker: ${JSON.stringify(payload)}`);
}

function record(payload: unknown, attempts: number): void {
  const marker = markerOf(payload);
  const list = ran.get(marker) ?? [];
  list.push({ payload, at: Date.now(), attempts });
  ran.set(marker, list);
}

const taskList: TaskList = {
  record: async (payload, helpers) => {
    record(payload, helpers.job.attempts);
  },
  noop: async () => {
    burstDone++;
  },
  flaky: async (payload, helpers) => {
    record(payload, helpers.job.attempts);
    if (helpers.job.attempts === 1) throw new Error('intentional failure on first attempt');
  },
  increment: async (_payload, helpers) => {
    incrementsInFlight++;
    maxIncrementsInFlight = Math.max(maxIncrementsInFlight, incrementsInFlight);
    try {
      await helpers.withPgClient(async (client) => {
        await client.query('begin');
        try {
          const { rows } = await client.query<{ value: number }>('select value from counters where id = 1 for update');
          const current = rows[0]?.value;
          assert.equal(typeof current, 'number');
          // Widen the window in which an interleaved statement would cause a lost update.
          await new Promise((resolve) => setImmediate(resolve));
          await client.query('update counters set value = $1 where id = 1', [Number(current) + 1]);
          await client.query(`insert into counter_log (source) values ('worker')`);
          await client.query('commit');
        } catch (err) {
          await client.query('rollback');
          throw err;
        }
      });
      incrementsDone++;
    } finally {
      incrementsInFlight--;
    }
  },
};

const logger = new Logger(() => (level, message) => {
  if ((level === 'error' || level === 'warning') && !message.includes('intentional failure')) {
    unexpectedErrors.push(`${level}: ${message}`);
    console.error(`[graphile-worker ${level}] ${message}`);
  }
});

// graphile-worker's typed emitter is a plain EventEmitter at runtime.
const events = new EventEmitter() as WorkerEvents;
let jobsInsertNotifications = 0;
let lastGetJobEmptyAt = 0;
events.on('pool:listen:notification', ({ message }) => {
  if (message.channel === 'jobs:insert') jobsInsertNotifications++;
});
events.on('worker:getJob:empty', () => {
  lastGetJobEmptyAt = Date.now();
});

function runnerOptions(): RunnerOptions {
  return {
    events,
    pgPool: pool.asPgPool(),
    concurrency: 4,
    taskList,
    noHandleSignals: true,
    pollInterval: 1000,
    logger,
  };
}

async function waitFor<T>(label: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for: ${label}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Longest stretch without a timer firing, measured as the CPU time this process spent in it.
 * A starved loop burns CPU for the whole gap; a process the OS merely descheduled (a busy
 * machine, a parallel CI job) has long wall-clock gaps but little CPU in them, so this
 * measure does not turn machine load into failures. (perf_hooks' histogram records nothing
 * when the loop is starved throughout, so it would report 0 for the worst case.)
 */
function startLoopGapMonitor(): () => number {
  const cpuMs = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  let last = cpuMs();
  let max = 0;
  const timer = setInterval(() => {
    const now = cpuMs();
    max = Math.max(max, now - last);
    last = now;
  }, 5);
  return () => {
    clearInterval(timer);
    return Math.max(max, cpuMs() - last);
  };
}

const ranOnce = (marker: string) => () => ran.get(marker)?.[0];

async function addJob(identifier: string, payload: object): Promise<void> {
  await db.query('select graphile_worker.add_job($1, $2::json)', [identifier, JSON.stringify(payload)]);
}

describe('PglitePgPool with graphile-worker 0.17.3', () => {
  before(async () => {
    db = await PgliteThread.create({ dataDir: 'memory://' });
    pool = new PglitePgPool(db);
    // graphile-worker warns about (and installs) handlers when a pool has none.
    pool.on('error', (err: Error) => unexpectedErrors.push(`pool error: ${err.message}`));
    pool.on('connect', (client: PglitePgClient) => {
      client.on('error', (err: Error) => unexpectedErrors.push(`client error: ${err.message}`));
    });
    unlockedBeforeMigrations = await unlockDeadWorkers(db);
    const t0 = performance.now();
    await runMigrations({ pgPool: pool.asPgPool(), logger });
    migrationMs = performance.now() - t0;
    await db.exec(`
      create table counters (id int primary key, value int not null);
      insert into counters values (1, 0);
      create table counter_log (id serial primary key, source text not null);
    `);
    runner = await run(runnerOptions());
  });

  after(async () => {
    if (runner) await runner.stop();
    if (pool && !pool.ending) await pool.end();
    if (db && !db.closed) await db.close();
  });

  test('migrations ran through the adapter', async () => {
    console.log(`    migrations took ${migrationMs.toFixed(0)} ms`);
    const { rows } = await db.query<{ n: number }>('select count(*)::int as n from graphile_worker.migrations');
    assert.ok((rows[0]?.n ?? 0) >= 19, 'all 19 migrations recorded');
    assert.equal(unlockedBeforeMigrations, 0, 'unlockDeadWorkers is a no-op before the schema exists');
  });

  test('a job added on the plain PGlite runs promptly with its payload intact', async () => {
    const payload = { marker: 'plain', nested: { list: [1, 'two', null, true], n: 1.5 }, text: 'héllo "quoted" \\ ✓' };
    const t0 = Date.now();
    await addJob('record', payload);
    const first = await waitFor('plain job', ranOnce('plain'));
    assert.deepEqual(first.payload, payload);

    // Once every worker has gone idle (each waits pollInterval = 1000 ms before polling again),
    // only the NOTIFY reaching graphile-worker's LISTEN client can explain a quick pickup.
    const latencies: number[] = [];
    let previousRunAt = first.at;
    for (let i = 0; i < 5; i++) {
      await waitFor('workers idle', () => (lastGetJobEmptyAt > previousRunAt ? true : undefined));
      const marker = `latency-${i}`;
      const notificationsBefore = jobsInsertNotifications;
      const start = Date.now();
      await addJob('record', { marker });
      const r = await waitFor(marker, ranOnce(marker));
      latencies.push(r.at - start);
      previousRunAt = r.at;
      await waitFor('jobs:insert notification', () => (jobsInsertNotifications > notificationsBefore ? true : undefined));
    }
    latencies.sort((a, b) => a - b);
    const median = latencies[Math.floor(latencies.length / 2)] ?? Infinity;
    console.log(`    first job ${first.at - t0} ms; pickup from idle ms: ${latencies.join(', ')} (median ${median})`);
    assert.ok(median < 300, `median pickup ${median} ms should come from NOTIFY, not 1 s polling`);
  });

  test('a job added in an app transaction runs only after commit; a rolled-back one never runs', async () => {
    let beforeCommit = 0;
    await db.transaction(async (tx) => {
      await tx.query(`select graphile_worker.add_job('record', json_build_object('marker', 'tx-commit'))`);
      // Keep the transaction open across many event-loop turns, giving the worker every chance.
      for (let i = 0; i < 30; i++) {
        await new Promise((resolve) => setImmediate(resolve));
        await tx.query('select 1');
      }
      const { rows } = await tx.query<{ locked_by: string | null }>(
        `select locked_by from graphile_worker._private_jobs where payload->>'marker' = 'tx-commit'`,
      );
      assert.equal(rows.length, 1);
      assert.equal(rows[0]?.locked_by, null, 'not picked up while the transaction is open');
      assert.equal(ran.get('tx-commit'), undefined);
      beforeCommit = Date.now();
    });
    const committed = await waitFor('tx-commit job', ranOnce('tx-commit'));
    assert.ok(committed.at >= beforeCommit, 'ran after commit');

    await assert.rejects(
      db.transaction(async (tx) => {
        await tx.query(`select graphile_worker.add_job('record', json_build_object('marker', 'tx-rollback'))`);
        throw new Error('abort this transaction');
      }),
      /abort this transaction/,
    );
    // A later committed job having run proves the worker looked after the rollback.
    await addJob('record', { marker: 'after-rollback' });
    await waitFor('after-rollback job', ranOnce('after-rollback'));
    assert.equal(ran.get('tx-rollback'), undefined, 'rolled-back job never ran');
    const { rows } = await db.query<{ n: number }>(
      `select count(*)::int as n from graphile_worker._private_jobs where payload->>'marker' = 'tx-rollback'`,
    );
    assert.equal(rows[0]?.n, 0);
  });

  test('a failing task is retried on graphile-worker schedule', async () => {
    await db.query(`select graphile_worker.add_job('flaky', json_build_object('marker', 'flaky'), max_attempts := 3)`);
    await waitFor('first flaky attempt', ranOnce('flaky'));
    const failed = await waitFor('failure recorded', async () => {
      const { rows } = await db.query<{ attempts: number; last_error: string | null; locked_by: string | null; in_future: boolean }>(
        `select attempts, last_error, locked_by, run_at > now() as in_future
           from graphile_worker._private_jobs where payload->>'marker' = 'flaky'`,
      );
      const row = rows[0];
      return row && row.last_error !== null && row.locked_by === null ? row : undefined;
    });
    assert.equal(failed.attempts, 1);
    assert.match(failed.last_error ?? '', /intentional failure/);
    assert.equal(failed.in_future, true, 'run_at moved into the future');

    // First retry is due after exp(1) ≈ 2.7 s, then found by polling (no NOTIFY for a future job).
    const attempts = await waitFor('second flaky attempt', () => {
      const list = ran.get('flaky');
      return list && list.length >= 2 ? list : undefined;
    }, 8_000);
    assert.deepEqual(attempts.map((a) => a.attempts), [1, 2]);
    await waitFor('flaky job completed and deleted', async () => {
      const { rows } = await db.query(`select 1 from graphile_worker._private_jobs where payload->>'marker' = 'flaky'`);
      return rows.length === 0 ? true : undefined;
    });
  });

  test('40 worker transactions and 40 app transactions on one counter stay consistent', async () => {
    const stopLoopMonitor = startLoopGapMonitor();
    const t0 = performance.now();
    await db.transaction(async (tx) => {
      for (let i = 0; i < 40; i++) {
        await tx.query(`select graphile_worker.add_job('increment', json_build_object('i', $1::int))`, [i]);
      }
    });
    const appSide = Array.from({ length: 40 }, async () => {
      await db.transaction(async (tx) => {
        const { rows } = await tx.query<{ value: number }>('select value from counters where id = 1 for update');
        await new Promise((resolve) => setImmediate(resolve));
        await tx.query('update counters set value = $1 where id = 1', [(rows[0]?.value ?? NaN) + 1]);
        await tx.query(`insert into counter_log (source) values ('app')`);
      });
    });
    await Promise.all(appSide);
    await waitFor('40 increment jobs', () => (incrementsDone >= 40 ? true : undefined), 30_000);
    // Completion (deleting the job row) follows the task's return.
    await waitFor('all jobs completed', async () => {
      const { rows } = await db.query<{ n: number }>('select count(*)::int as n from graphile_worker._private_jobs');
      return rows[0]?.n === 0 ? true : undefined;
    });
    const elapsed = performance.now() - t0;
    const maxLoopDelayMs = stopLoopMonitor();

    const { rows } = await db.query<{ value: number; worker: number; app: number }>(`
      select (select value from counters where id = 1) as value,
             (select count(*)::int from counter_log where source = 'worker') as worker,
             (select count(*)::int from counter_log where source = 'app') as app`);
    console.log(
      `    80 increments in ${elapsed.toFixed(0)} ms; max tasks in flight ${maxIncrementsInFlight}; ` +
        `longest event-loop gap ${maxLoopDelayMs.toFixed(0)} ms of CPU`,
    );
    assert.deepEqual(rows[0], { value: 80, worker: 40, app: 40 });
    assert.ok(maxIncrementsInFlight >= 2, 'several tasks ran concurrently');
    assert.ok(maxLoopDelayMs < 1000, `event loop stalled ${maxLoopDelayMs} ms`);
  });

  test('a burst of 300 jobs does not starve the event loop', async () => {
    const t0 = performance.now();
    await db.query(`select graphile_worker.add_jobs(array(
      select ('noop', '{}'::json, null, null, null, null, null, null)::graphile_worker.job_spec
      from generate_series(1, 300)))`);
    const stopLoopMonitor = startLoopGapMonitor();
    await waitFor('300 noop jobs', () => (burstDone >= 300 ? true : undefined), 30_000);
    const maxLoopDelayMs = stopLoopMonitor();
    const elapsed = performance.now() - t0;
    console.log(
      `    300 jobs in ${elapsed.toFixed(0)} ms (${((300 / elapsed) * 1000).toFixed(0)} jobs/s); ` +
        `longest event-loop gap ${maxLoopDelayMs.toFixed(0)} ms of CPU`,
    );
    assert.ok(maxLoopDelayMs < 250, `event loop stalled ${maxLoopDelayMs.toFixed(0)} ms`);
  });

  test('results are parsed and parameters encoded as pg does', async () => {
    const { rows, fields, command, rowCount } = await pool.query(`
      select '2024-05-06T07:08:09.123Z'::timestamptz as ts, 9007199254740993::int8 as big,
             '{"a":[1,{"b":null}]}'::jsonb as jb, '{"c":2}'::json as js, true as yes, false as no,
             array[1,2,3]::int[] as ints, array['x','y"z',null]::text[] as texts,
             1.50::numeric as num, 42::int4 as i4, 'abc'::bytea as bytes, null::text as nothing`);
    assert.equal(command, 'SELECT');
    assert.equal(rowCount, 1);
    const row = rows[0];
    assert.ok(row);
    assert.ok(row.ts instanceof Date);
    assert.equal(row.ts.toISOString(), '2024-05-06T07:08:09.123Z');
    assert.equal(row.big, '9007199254740993', 'int8 as string, unlike PGlite (number/BigInt)');
    assert.deepEqual(row.jb, { a: [1, { b: null }] });
    assert.deepEqual(row.js, { c: 2 });
    assert.equal(row.yes, true);
    assert.equal(row.no, false);
    assert.deepEqual(row.ints, [1, 2, 3]);
    assert.deepEqual(row.texts, ['x', 'y"z', null]);
    assert.equal(row.num, '1.50', 'numeric as string');
    assert.equal(row.i4, 42);
    assert.ok(Buffer.isBuffer(row.bytes));
    assert.equal(row.bytes.toString(), 'abc');
    assert.equal(row.nothing, null);
    assert.deepEqual(
      fields.map((f) => [f.name, f.dataTypeID]),
      [['ts', 1184], ['big', 20], ['jb', 3802], ['js', 114], ['yes', 16], ['no', 16], ['ints', 1007],
        ['texts', 1009], ['num', 1700], ['i4', 23], ['bytes', 17], ['nothing', 25]],
    );

    const date = new Date('2024-05-06T07:08:09.123Z');
    const params = await pool.query(
      `select $1::timestamptz as d, $11::text as d_text, $2::int[] as ints, $3::text as arr_text, $4::jsonb as obj,
              $5::text as obj_text, $6::text as nul, $7::bytea as buf, $8::bool as flag, $9::int8 as big, $10::float8 as f`,
      [date, [1, 2, 3], ['a', 'b"c', null], { k: [1, 'v'] }, { k: 1 }, null, Buffer.from([0, 1, 255]), true, 9007199254740993n, 0.25, date],
    );
    const p = params.rows[0];
    assert.ok(p);
    assert.ok(p.d instanceof Date);
    assert.equal(p.d.getTime(), date.getTime());
    // pg sends Dates as local time with an explicit offset.
    assert.equal(typeof p.d_text, 'string');
    assert.match(String(p.d_text), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.123[+-]\d\d:\d\d$/);
    assert.deepEqual(p.ints, [1, 2, 3]);
    assert.equal(p.arr_text, '{"a","b\\"c",NULL}');
    assert.deepEqual(p.obj, { k: [1, 'v'] });
    assert.equal(p.obj_text, '{"k":1}');
    assert.equal(p.nul, null);
    assert.ok(Buffer.isBuffer(p.buf));
    assert.deepEqual([...p.buf], [0, 1, 255]);
    assert.equal(p.flag, true);
    assert.equal(p.big, '9007199254740993');
    assert.equal(p.f, 0.25);

    // Command tags, rowCount, config-object queries, rowMode, named statements, multi-statement.
    await pool.query('create table parse_check (id int primary key, v text)');
    const ins = await pool.query({ text: 'insert into parse_check values ($1, $2), ($3, $4)', values: [1, 'a', 2, 'b'], name: 'ins' });
    assert.equal(ins.command, 'INSERT');
    assert.equal(ins.rowCount, 2);
    const upd = await pool.query({ text: 'update parse_check set v = $1 where id = $2', values: ['z', 1], name: 'upd' });
    const upd2 = await pool.query({ text: 'update parse_check set v = $1 where id = $2', values: ['y', 9], name: 'upd' });
    assert.deepEqual([upd.command, upd.rowCount, upd2.rowCount], ['UPDATE', 1, 0]);
    const arr = await pool.query<unknown[]>({ text: 'select id, v from parse_check order by id', rowMode: 'array' });
    assert.deepEqual(arr.rows, [[1, 'z'], [2, 'b']]);
    const multi: unknown = await pool.query('select 1 as a; select 2 as b');
    assert.ok(Array.isArray(multi), 'multi-statement simple query resolves with an array, like pg');
    assert.equal(multi.length, 2);

    await assert.rejects(pool.query('select 1/0'), (err: Error & { code?: string }) => err.code === '22012');

    // Callback forms, as pg offers them.
    const viaCallback = await new Promise<number>((resolve, reject) => {
      pool.query<{ n: number }>('select $1::int as n', [7], (err, result) => (err ? reject(err) : resolve(result?.rows[0]?.n ?? -1)));
    });
    assert.equal(viaCallback, 7);
  });

  test('client transactions: isolation, aborted COMMIT reports ROLLBACK, release rolls back', async () => {
    await pool.query('create table tx_check (id int primary key)');
    const a = await pool.connect();
    await a.query('begin');
    await a.query('insert into tx_check values (1)');
    // Another client's statement waits for a's transaction instead of running inside it.
    let otherDone = false;
    const other = pool.query<{ n: number }>('select count(*)::int as n from tx_check').then((r) => {
      otherDone = true;
      return r.rows[0]?.n;
    });
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(otherDone, false);
    await a.query('rollback');
    assert.equal(await other, 0, 'saw nothing of the rolled-back insert');

    // BEGIN's options are applied to the PGlite transaction.
    await a.query('begin isolation level serializable, read only;');
    await assert.rejects(a.query('insert into tx_check values (9)'), (err: Error & { code?: string }) => err.code === '25006');
    assert.equal((await a.query('rollback')).command, 'ROLLBACK');

    await a.query('start transaction');
    await a.query('insert into tx_check values (2)');
    await assert.rejects(a.query('insert into tx_check values (2)'), (err: Error & { code?: string }) => err.code === '23505');
    await assert.rejects(a.query('select 1'), (err: Error & { code?: string }) => err.code === '25P02');
    const commit = await a.query('commit');
    assert.equal(commit.command, 'ROLLBACK', 'like PostgreSQL, COMMIT of a failed transaction rolls back');
    await a.release();

    const b = await pool.connect();
    await b.query('begin');
    await b.query('insert into tx_check values (3)');
    await b.release();
    const { rows } = await db.query<{ n: number }>('select count(*)::int as n from tx_check');
    assert.equal(rows[0]?.n, 0, 'releasing with an open transaction rolled it back and freed the database');
    assert.throws(() => b.release(), /already been released/);
  });

  test('notifications reach only the listening client, after the notifying commit', async () => {
    const listener = await pool.connect();
    const bystander = await pool.connect();
    const got: Array<{ channel: string; payload?: string | undefined }> = [];
    const stray: unknown[] = [];
    listener.on('notification', (m: { channel: string; payload?: string }) => got.push(m));
    bystander.on('notification', (m: unknown) => stray.push(m));
    await listener.query('LISTEN "test:chan"');

    await bystander.query('begin');
    await bystander.query(`select pg_notify('test:chan', 'in-tx')`);
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(got.length, 0, 'not delivered before commit');
    await bystander.query('commit');
    await waitFor('notification', () => (got.length > 0 ? true : undefined));
    assert.deepEqual(got.map((m) => [m.channel, m.payload]), [['test:chan', 'in-tx']]);

    await listener.query('UNLISTEN "test:chan"');
    await db.query(`select pg_notify('test:chan', 'after-unlisten')`);
    await pool.query(`select pg_notify('test:chan', 'after-unlisten-2')`);
    assert.equal(got.length, 1);
    assert.equal(stray.length, 0);
    await listener.release();
    await bystander.release();
  });

  test('unlockDeadWorkers frees a job left locked by a dead worker', async () => {
    await db.transaction(async (tx) => {
      // Lock in the same transaction as the insert so the live worker can never grab it first.
      await tx.query(`select graphile_worker.add_job('record', json_build_object('marker', 'dead'), queue_name := 'dead-q')`);
      await tx.query(
        `update graphile_worker._private_jobs set locked_by = 'worker-dead-1', locked_at = now() where payload->>'marker' = 'dead'`,
      );
      await tx.query(
        `update graphile_worker._private_job_queues set locked_by = 'worker-dead-1', locked_at = now() where queue_name = 'dead-q'`,
      );
    });
    await addJob('record', { marker: 'beside-dead' });
    await waitFor('job beside the locked one', ranOnce('beside-dead'));
    assert.equal(ran.get('dead'), undefined, 'locked job is skipped by the live worker');

    // As at start-up: no live worker while unlocking.
    await runner?.stop();
    runner = null;
    assert.equal(await unlockDeadWorkers(db), 1);
    const { rows } = await db.query<{ job_locked: string | null; queue_locked: string | null }>(`
      select (select locked_by from graphile_worker._private_jobs where payload->>'marker' = 'dead') as job_locked,
             (select locked_by from graphile_worker._private_job_queues where queue_name = 'dead-q') as queue_locked`);
    assert.deepEqual(rows[0], { job_locked: null, queue_locked: null });

    runner = await run(runnerOptions());
    const dead = await waitFor('formerly locked job', ranOnce('dead'));
    assert.deepEqual(dead.payload, { marker: 'dead' });
  });

  test('runner.stop() and pool.end() leave the PGlite usable by the app', async () => {
    await runner?.stop();
    runner = null;
    await pool.end();
    assert.equal(pool.ended, true);
    assert.equal(pool.totalCount, 0, 'every client, including the LISTEN client, was released');
    await assert.rejects(pool.connect(), /after calling end/);
    assert.equal(db.closed, false);
    const { rows } = await db.query<{ n: number }>('select count(*)::int as n from counters');
    assert.equal(rows[0]?.n, 1);
    await db.transaction(async (tx) => {
      await tx.query('update counters set value = value + 1 where id = 1');
    });
    assert.deepEqual(unexpectedErrors, []);
  });
});

test('compiled threads nobody started for a day are removed when another is compiled; recent ones stay', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-thread-cache-'));
  try {
    const day = 24 * 3600_000;
    const old = new Date(Date.now() - 2 * day);
    for (const name of ['stale.mjs', 'stale.mjs.123.tmp']) {
      fs.writeFileSync(path.join(dir, name), '');
      fs.utimesSync(path.join(dir, name), old, old);
    }
    fs.writeFileSync(path.join(dir, 'recent.mjs'), '');
    await removeStaleCompiled(pathToFileURL(`${dir}/`), Date.now() - day);
    assert.deepEqual(fs.readdirSync(dir), ['recent.mjs']);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
