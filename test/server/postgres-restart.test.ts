/**
 * PostgreSQL itself stopped and started under load (issue 15): not a cut connection
 * (database-away.test.ts) but the real thing, on a private cluster of the test's own — fast
 * shutdown ends every session with 57P01, the port then refuses, and the starting server
 * answers 57P03 before it accepts again. Clinicians keep reading and writing (every write
 * with an Idempotency-Key, retried with the same key until acknowledged, as a device does).
 *
 * While the database is away: every API request answers 503 `database_unavailable` in the
 * contract's shape, never a 500, never a hang; /readyz 503, /healthz 200. After it is back the
 * same server — no restart — answers 2xx again, /readyz 200, a sync socket gets changes, the
 * job worker runs a job; then a second, quick `pg_ctl restart -m fast` is survived the same
 * way. Every acknowledged write is in the database exactly once, and no write — acknowledged
 * or not — is there twice.
 *
 * PostgreSQL only by nature (the embedded database cannot go away); it runs when
 * TEST_DATABASE_URL is set, like the other PostgreSQL-only suites.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { openDatabase } from '../../server/src/db/database.ts';
import { applyMigrations } from '../../server/src/db/migrate.ts';
import { prepareJobQueue } from '../../server/src/jobs/job-queue-pool.ts';
import { backends, type TestBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres.ts';
import { helloSync, nextFeed } from '../helpers/sync-socket.ts';
import { ANSWER_BOUND_MS, assertAwayAnswers, readyAgain, REOPEN_MS, SETTLE_MS, timedRequest, type Outcome } from '../helpers/database-outage.ts';
import { RATE_LIMITS_OFF, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { createPatient, scheduleVisit, timerEvent, utcClinician, type User } from './visits/visit-fixtures.ts';

const onPostgres = backends.some((b) => b.name === 'postgres');

/** How long a write is retried with its key before the client gives up on it. */
const RETRY_FOR_MS = 60_000;

const today = () => new Date().toISOString().slice(0, 10);

/** One logical write: a patient whose last name is a fixed-length tag, and its key. */
interface Write {
  readonly user: User;
  readonly tag: string;
  readonly key: string;
  acknowledged: boolean;
  attempts: number;
}

describe('PostgreSQL stopped and restarted under load [postgres]', { skip: onPostgres ? false : 'needs TEST_DATABASE_URL' }, () => {
  let cluster: PrivatePostgres | undefined;
  let server: TestServer | undefined;

  // Either would end a real server process: here they are recorded and fail the test.
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  before(async () => {
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onUncaught);
    cluster = await startPrivatePostgres();
    const url = cluster.url;
    const backend: TestBackend = {
      name: 'postgres',
      async open() {
        const database = await openDatabase({ kind: 'postgres', url, poolSize: 10 });
        await applyMigrations(database);
        const pool = new pg.Pool({ connectionString: url, max: 2 });
        await prepareJobQueue(pool);
        await pool.end();
        // The cluster is the test's own: dropping it is destroy() in `after`.
        return { database, url, drop: () => database.close() };
      },
    };
    // Rate limits off: a 429 under the steady load would hide the 503s and 2xx this is about.
    server = await startTestServer(backend, { env: RATE_LIMITS_OFF });
  });
  after(async () => {
    await server?.close().catch(() => {});
    await cluster?.destroy();
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onUncaught);
  });

  const timed = (label: string, method: string, path: string, token: string, opts: { body?: unknown; key?: string } = {}) =>
    timedRequest((server as TestServer).url, label, method, path, token, opts);

  /** Every patient of `user`, read through the API (names are encrypted at rest). */
  async function lastNames(user: User): Promise<string[]> {
    const names: string[] = [];
    for (let page = 1; ; page++) {
      const r = await timed('list', 'GET', `/patient/my-patients?per_page=100&page=${page}`, user.token);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const data = r.body.data as Array<{ last_name: string }>;
      names.push(...data.map((p) => p.last_name));
      if (data.length < 100) return names;
    }
  }

  test('503 while it is away, 2xx after, without a restart of the server; every acknowledged write once', async () => {
    const srv = server as TestServer;
    const pgc = cluster as PrivatePostgres;
    const clinicians: Array<{ user: User; visit: string }> = [];
    for (let i = 0; i < 4; i++) {
      const user = await utcClinician(srv);
      const patient = await createPatient(srv, user);
      const visit = await scheduleVisit(srv, user, { patient_uuid: patient.uuid, visit_date: today(), start_time: `0${i + 1}:00` });
      clinicians.push({ user, visit });
    }

    const outcomes: Outcome[] = [];
    const writes: Write[] = [];
    let stop = false;
    let round = 0;

    /** A device's write: the same key until a 2xx, or until it gives up. */
    async function write(user: User): Promise<void> {
      // Fixed length: no tag is a prefix of another.
      const w: Write = { user, tag: `T${randomUUID().replaceAll('-', '').slice(0, 16)}`, key: randomUUID(), acknowledged: false, attempts: 0 };
      writes.push(w);
      const giveUpAt = performance.now() + RETRY_FOR_MS;
      while (performance.now() < giveUpAt) {
        const o = await timed('create patient', 'POST', '/patient/create', user.token, { key: w.key, body: { first_name: 'Load', last_name: w.tag, address: '1 Main St' } });
        outcomes.push(o);
        w.attempts++;
        if (o.status === 200) {
          w.acknowledged = true;
          return;
        }
        // 503 while away; 409 while the first try's claim is unfinished. Back off a little.
        await new Promise((r) => setTimeout(r, 250));
        if (stop && o.status === 409) return;
      }
    }

    const loops = clinicians.map(async ({ user, visit }) => {
      while (!stop) {
        round++;
        const [reads] = await Promise.all([
          Promise.all([
            timed('upcoming visits', 'GET', '/get-upcomming-visits', user.token),
            timed('visit details', 'GET', `/visit-details/${visit}`, user.token),
            timed('my patients', 'GET', '/patient/my-patients', user.token),
            timed('mileage', 'PUT', `/visit/${visit}/mileage`, user.token, { key: randomUUID(), body: { total_miles: round % 100, recorded_at: new Date().toISOString() } }),
          ]),
          write(user),
        ]);
        outcomes.push(...reads);
        // A breath between rounds so the load is steady, not a storm.
        await new Promise((r) => setTimeout(r, 20));
      }
    });

    const acked = () => writes.filter((w) => w.acknowledged).length;
    await eventually(() => assert.ok(acked() >= 8, 'writes are acknowledged under load'), { timeoutMs: 30_000 });

    // 1. Stopped for a while (fast shutdown), then started again.
    const stopBegan = performance.now();
    await pgc.stop();
    const stoppedAt = performance.now();
    await eventually(
      () => {
        const late = outcomes.filter((o) => o.startedAt > stoppedAt + SETTLE_MS);
        assert.ok(late.length >= 40, `requests answered since the stop: ${late.length}`);
      },
      { timeoutMs: ANSWER_BOUND_MS * 6 },
    );
    assert.equal((await fetch(`${srv.url}/healthz`)).status, 200, '/healthz stays 200: the process is fine');
    const readyz = await fetch(`${srv.url}/readyz`);
    assert.equal(readyz.status, 503);
    assert.equal((await readyz.json()).checks.database, 'failing');
    assertAwayAnswers(outcomes, stoppedAt, performance.now());
    const ackedBeforeStart = acked();
    await pgc.start();

    const recoveredAt = await readyAgain(srv.url, 60_000);
    await eventually(
      () => {
        const since = outcomes.filter((o) => o.startedAt > recoveredAt + REOPEN_MS);
        assert.ok(since.length >= 20, `requests since recovery: ${since.length}`);
        assert.ok(acked() > ackedBeforeStart + 4, 'writes are acknowledged again');
      },
      { timeoutMs: 30_000 },
    );
    for (const o of outcomes.filter((x) => x.startedAt > recoveredAt + REOPEN_MS)) {
      assert.ok(o.status === 200 || (o.status === 409 && o.body.code === 'idempotency_in_progress'), `${o.label} after recovery: ${o.status} ${JSON.stringify(o.body)}`);
    }

    // The server's own parts came back too: a sync socket gets a change, the worker runs a job.
    const first = clinicians[0] as (typeof clinicians)[number];
    const { socket } = await helloSync(srv, first.user.token, randomUUID());
    await nextFeed(socket);
    const change = await timed('timer', 'POST', '/visit-timer-events', first.user.token, { body: { schedule_uuid: first.visit, events: [timerEvent('start_travel', new Date().toISOString())] } });
    assert.equal(change.status, 200, JSON.stringify(change.body));
    await eventually(
      async () => {
        const feed = await nextFeed(socket, 2_000);
        assert.ok(feed.changes.some((ch) => ch.table === 'timer_events'), 'the timer event reaches the device');
      },
      { timeoutMs: 20_000 },
    );
    socket.close();
    const send = await timed('send otp', 'POST', '/verify-email/send-otp', first.user.token);
    assert.equal(send.status, 200, JSON.stringify(send.body));
    await srv.mail.waitFor(first.user.email, () => true, 30_000);

    // 2. A quick restart (the usual maintenance step): the same recovery, no rules relaxed.
    const restartBegan = performance.now();
    const ackedBeforeRestart = acked();
    await pgc.restart();
    const again = await readyAgain(srv.url, 60_000);
    await eventually(() => assert.ok(acked() > ackedBeforeRestart + 4, 'writes are acknowledged after the restart'), { timeoutMs: 30_000 });

    stop = true;
    await Promise.all(loops);
    const failures = outcomes.filter((o) => o.status === 500 || o.status === 0 || (o.status >= 500 && o.status !== 503));
    assert.deepEqual(failures.slice(0, 3), [], 'no 500 and no hang, across both');
    for (const o of outcomes.filter((x) => x.status === 503)) {
      assert.equal(o.body.code, 'database_unavailable', JSON.stringify(o.body));
      assert.ok(o.startedAt + o.ms >= stopBegan, 'a 503 only once the database went away');
      assert.ok(o.startedAt < recoveredAt + REOPEN_MS || (o.startedAt + o.ms >= restartBegan && o.startedAt < again + REOPEN_MS), `a 503 outside the outages: ${o.label}`);
    }
    assert.deepEqual(uncaught.map(String), [], 'no uncaught exception or unhandled rejection while the database came and went');

    // Exactly once: each acknowledged write is there once; none at all is there twice.
    const retried = writes.filter((w) => w.acknowledged && w.attempts > 1).length;
    for (const { user } of clinicians) {
      const names = await lastNames(user);
      const count = new Map<string, number>();
      for (const n of names) count.set(n, (count.get(n) ?? 0) + 1);
      for (const w of writes.filter((x) => x.user === user)) {
        const n = count.get(w.tag) ?? 0;
        if (w.acknowledged) assert.equal(n, 1, `acknowledged write ${w.tag} is there exactly once`);
        else assert.ok(n <= 1, `unacknowledged write ${w.tag} is there at most once (${n})`);
      }
    }
    const acknowledged = acked();
    assert.ok(acknowledged > 20 && retried > 0, `${acknowledged} writes acknowledged, some of them after retries`);
  });
});
