/**
 * PostgreSQL away under load: the server reaches its database through a TCP proxy, and the
 * proxy is cut (every connection dropped, new ones refused) while clinicians read, write and
 * hold sync sockets. While it is away every API request answers 503 `database_unavailable` in
 * the contract's shape within a bound (never a 500, never a hang), /readyz 503 and /healthz
 * 200. Once the proxy is restored the same server — no restart — answers again, every write
 * acknowledged before the cut is there, sync sockets get their changes again, and the job
 * worker goes on running jobs (one enqueued right after the restore is delivered).
 *
 * PostgreSQL only: the embedded database has no connection to lose.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { WebSocket } from 'ws';
import { openDatabase } from '../../server/src/db/database.ts';
import { backends, type TestBackend, type TestDatabase } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { helloSync, nextFeed, type SyncSocket } from '../helpers/sync-socket.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { ANSWER_BOUND_MS, assertAwayAnswers, readyAgain, REOPEN_MS, SETTLE_MS, timedRequest, type Outcome } from '../helpers/database-outage.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { createPatient, scheduleVisit, timerEvent, utcClinician, type User } from './visits/visit-fixtures.ts';

const postgresBackend = backends.find((b) => b.name === 'postgres');

const today = () => new Date().toISOString().slice(0, 10);

describe('database away under load [postgres]', { skip: postgresBackend ? false : 'needs TEST_DATABASE_URL' }, () => {
  let real: TestDatabase;
  let proxy: TcpProxy;
  let server: TestServer;

  // A driver error thrown outside any request (postgres.js's null-socket write) would end a
  // real server process: here it is recorded and fails the test.
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  before(async () => {
    process.on('uncaughtException', onUncaught);
    real = await (postgresBackend as TestBackend).open();
    const target = new URL(real.url as string);
    proxy = await startTcpProxy(`http://${target.hostname}:${target.port || 5432}`);
    const proxied = new URL(real.url as string);
    proxied.host = new URL(proxy.url).host;
    // Everything the server opens — its pool, LISTEN, the job queue, worker liveness — goes
    // through the proxy; the test's own checks use `real` directly.
    const viaProxy: TestBackend = {
      name: 'postgres',
      async open() {
        const database = await openDatabase({ kind: 'postgres', url: proxied.toString(), poolSize: 10 });
        return { database, url: proxied.toString(), drop: () => database.close() };
      },
    };
    server = await startTestServer(viaProxy);
  });
  after(async () => {
    await server?.close();
    await proxy?.close();
    await real?.drop();
    process.off('uncaughtException', onUncaught);
    assert.deepEqual(uncaught.map(String), [], 'no uncaught exception while the database came and went');
  });

  const timed = (label: string, method: string, path: string, token: string, body?: unknown) =>
    timedRequest(server.url, label, method, path, token, body === undefined ? {} : { body });

  test('503 while PostgreSQL is away, then recovery without a restart', async () => {
    // Four clinicians, each with a patient, a visit today and an open sync socket.
    const clinicians: Array<{ user: User; visit: string; socket: SyncSocket; clientId: string; cursor: string }> = [];
    for (let i = 0; i < 4; i++) {
      const user = await utcClinician(server);
      const patient = await createPatient(server, user);
      const visit = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today(), start_time: `0${i + 1}:00` });
      const clientId = randomUUID();
      const { socket } = await helloSync(server, user.token, clientId);
      const feed = await nextFeed(socket);
      clinicians.push({ user, visit, socket, clientId, cursor: feed.checkpoint });
    }

    // The load: each clinician reads the day, a visit, its patients, and writes (patients and
    // mileage), back to back, until told to stop.
    const outcomes: Outcome[] = [];
    const acknowledged: Array<{ patient: string; at: number }> = [];
    let stop = false;
    let round = 0;
    const loops = clinicians.map(async ({ user, visit }) => {
      while (!stop) {
        round++;
        const batch = await Promise.all([
          timed('upcoming visits', 'GET', '/get-upcomming-visits', user.token),
          timed('visit details', 'GET', `/visit-details/${visit}`, user.token),
          timed('my patients', 'GET', '/patient/my-patients', user.token),
          timed('create patient', 'POST', '/patient/create', user.token, { first_name: 'Load', last_name: `Round${round}`, address: '1 Main St' }),
          timed('mileage', 'PUT', `/visit/${visit}/mileage`, user.token, { total_miles: round % 100, recorded_at: new Date().toISOString() }),
        ]);
        outcomes.push(...batch);
        for (const o of batch) {
          if (o.label === 'create patient' && o.status === 200) acknowledged.push({ patient: o.body.data.uuid, at: o.startedAt });
        }
        // Not a wait for a state: a breath between rounds so the load is steady, not a storm.
        await new Promise((r) => setTimeout(r, 20));
      }
    });

    await eventually(() => assert.ok(acknowledged.length >= 8, 'writes are acknowledged under load'), { timeoutMs: 20_000 });
    const ackedBeforeCut = acknowledged.length;

    const cutAt = performance.now();
    proxy.cut();
    await eventually(
      () => {
        const late = outcomes.filter((o) => o.startedAt > cutAt + SETTLE_MS);
        assert.ok(late.length >= 40, `requests answered since the cut: ${late.length}`);
      },
      { timeoutMs: ANSWER_BOUND_MS * 4 },
    );
    const healthz = await fetch(`${server.url}/healthz`);
    assert.equal(healthz.status, 200);
    const readyzStarted = performance.now();
    const readyz = await fetch(`${server.url}/readyz`);
    assert.equal(readyz.status, 503);
    assert.deepEqual((await readyz.json()).checks.database, 'failing');
    assert.ok(performance.now() - readyzStarted < ANSWER_BOUND_MS, '/readyz answers within the bound');
    assertAwayAnswers(outcomes, cutAt, performance.now());

    const restoredAt = performance.now();
    proxy.restore();
    // The server comes back by itself.
    const recoveredAt = await readyAgain(server.url, 30_000);
    await eventually(
      () => {
        const after = outcomes.filter((o) => o.startedAt > recoveredAt + REOPEN_MS);
        assert.ok(after.length >= 20, `requests since recovery: ${after.length}`);
      },
      { timeoutMs: 20_000 },
    );
    stop = true;
    await Promise.all(loops);
    const afterRecovery = outcomes.filter((o) => o.startedAt > recoveredAt + REOPEN_MS);
    for (const o of afterRecovery) assert.equal(o.status, 200, `${o.label} after recovery: ${o.status} ${JSON.stringify(o.body)}`);
    // A failure says when the request started against the cut and the restore: which phase held it.
    const phaseOf = (o: Outcome) =>
      `started ${Math.round(o.startedAt - cutAt)} ms after the cut, ${Math.round(o.startedAt - restoredAt)} ms after the restore (ready again at ${Math.round(recoveredAt - restoredAt)} ms), took ${Math.round(o.ms)} ms`;
    const bad = outcomes.filter((o) => o.status === 500 || o.status === 0);
    assert.deepEqual(bad.map((o) => `${o.label}: ${o.status} ${JSON.stringify(o.body)}; ${phaseOf(o)}`), [], 'no 500 and no hang');

    // Every write acknowledged (before the cut, and any that slipped through) is there.
    assert.ok(acknowledged.length > ackedBeforeCut);
    const ids = acknowledged.map((a) => a.patient);
    const rows = await real.database.db.execute(sql`select count(*)::int as n from patients where id in ${sql.raw(`(${ids.map((id) => `'${id}'`).join(',')})`)}`);
    assert.equal((rows as unknown as Array<{ n: number }>)[0]?.n, ids.length);

    // Sync: each device gets back to a live feed — on its open socket, or (closed by the
    // server) on a new one from its cursor — and a change made now reaches it.
    for (const c of clinicians) {
      let socket = c.socket;
      if (socket.ws.readyState !== WebSocket.OPEN) {
        // The device resumes from the last cursor it was told it is synced to.
        const synced = socket.received.filter((m) => m.type === 'synced').at(-1);
        const again = await helloSync(server, c.user.token, c.clientId, synced?.type === 'synced' ? synced.cursor : c.cursor);
        await nextFeed(again.socket);
        socket = again.socket;
        c.socket = socket;
      }
      const change = await timed('timer', 'POST', '/visit-timer-events', c.user.token, {
        schedule_uuid: c.visit,
        events: [timerEvent('start_travel', new Date().toISOString())],
      });
      assert.equal(change.status, 200, JSON.stringify(change.body));
      await eventually(
        async () => {
          const feed = await nextFeed(socket, 2_000);
          assert.ok(feed.changes.some((ch) => ch.table === 'timer_events'), 'the timer event reaches the device');
        },
        { timeoutMs: 20_000 },
      );
    }

    // The worker survived: a job enqueued after the restore runs (a verification mail).
    const user = (clinicians[1] as (typeof clinicians)[number]).user;
    const send = await timed('send otp', 'POST', '/verify-email/send-otp', user.token);
    assert.equal(send.status, 200, JSON.stringify(send.body));
    await server.mail.waitFor(user.email, () => true, 20_000);
    assert.equal(server.runtime.worker?.running(), true);

    for (const c of clinicians) c.socket.close();
    assert.deepEqual(uncaught.map(String), [], 'no uncaught exception while the database came and went');
  });
});
