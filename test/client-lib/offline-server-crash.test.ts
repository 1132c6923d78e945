/**
 * The offline client and a server killed with SIGKILL while its upload is being acknowledged:
 * a device with ~200 queued writes comes online, the server process dies as the first acks
 * arrive (twice: again while the device resumes), a new process starts on the same data dir (PGlite) or database (PostgreSQL) on a new
 * port, and the device — whose address for the server, a TCP proxy, never changes — finishes
 * the upload by itself. The server ends with every write exactly once, the device with an
 * empty outbox, and the device reads what the server holds.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import type { FieldchartClient, Visit } from '../../client-lib/src/index.ts';
import { backends, serverDataDir } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { spawnServer, type ServerProcess } from '../helpers/processes.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { API, newAccount } from '../helpers/test-server.ts';
import { DEVICE_BACKOFF, ev, openClient, tempDataDir } from './support.ts';

const PATIENTS = 180;
const MILEAGE = 12;
const KILLS = 2;
const STEPS = ['start_travel', 'arrive', 'start_documentation', 'complete'] as const;
const WAIT = { timeoutMs: 120_000, intervalMs: 100 };
/**
 * A device tries again at least once per backoff ceiling, so its first connection to reach a
 * restarted server comes within that ceiling of the server being there; timers of a loaded
 * machine fire late, which this allows for.
 */
const REACH_SLACK_MS = 2_000;

async function call<T = any>(base: string, method: string, pathname: string, token: string | null, body?: unknown): Promise<T> {
  const res = await fetch(`${base}${API}${pathname}`, {
    method,
    headers: { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const parsed = (await res.json()) as { data: T };
  assert.equal(res.status, 200, `${method} ${pathname}: ${res.status} ${JSON.stringify(parsed)}`);
  return parsed.data;
}

async function allPatients(base: string, token: string): Promise<{ uuid: string; first_name: string; last_name: string }[]> {
  const out: { uuid: string; first_name: string; last_name: string }[] = [];
  for (let page = 1; ; page++) {
    const data = await call<typeof out>(base, 'GET', `/patient/my-patients?per_page=100&page=${page}`, token);
    out.push(...data);
    if (data.length < 100) return out;
  }
}

const byUuid = <T extends { uuid: string }>(xs: readonly T[]) => [...xs].sort((a, b) => a.uuid.localeCompare(b.uuid));
const patientView = (p: { uuid: string; first_name: string; last_name: string }) => ({ uuid: p.uuid, first_name: p.first_name, last_name: p.last_name });
const visitView = (v: Visit) => ({
  status: v.status,
  evv: v.evv,
  timer_events: v.timer_events.map((e) => ({ ...e, event_time: new Date(e.event_time).toISOString() })),
  mileage: v.mileage ? { ...v.mileage, recorded_at: new Date(v.mileage.recorded_at).toISOString() } : null,
});

for (const backend of backends) {
  test(`the server killed with SIGKILL mid-upload: the device finishes against the restarted server, every write once [${backend.name}]`, async (t) => {
    const dataDir = await serverDataDir('fieldchart-client-crash-', backend.name === 'postgres');
    const deviceDir = tempDataDir();
    const db = backend.name === 'postgres' ? await backend.open() : null;
    const env = { FIELDCHART_DATA_DIR: dataDir, DATABASE_URL: db?.url ?? undefined, LOG_LEVEL: 'info' };
    let server: ServerProcess = spawnServer(env);
    let proxy: TcpProxy | null = null;
    let client: FieldchartClient | null = null;
    after(async () => {
      await client?.close().catch(() => undefined);
      await proxy?.close();
      await server.stop('SIGKILL');
      await db?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
      fs.rmSync(deviceDir, { recursive: true, force: true });
    });

    const url = await server.url(WAIT.timeoutMs);
    const account = newAccount();
    const registered = await call<{ token: string }>(url, 'POST', '/register', null, account);
    await call(url, 'PUT', '/my-settings', registered.token, { time_zone: 'UTC' });
    const seed = await call<{ uuid: string }>(url, 'POST', '/patient/create', registered.token, { first_name: 'Seed', last_name: 'Patient' });
    const today = new Date().toISOString().slice(0, 10);
    const visit = await call<{ uuid: string }>(url, 'POST', '/schedule-visit-request-save', registered.token, { patient_uuid: seed.uuid, visit_date: today, start_time: '09:00' });

    proxy = await startTcpProxy(url);
    client = await openClient(proxy.url, deviceDir);
    await client.signIn({ email: account.email, password: account.password });
    await client.sync.whenSynced(WAIT);

    // Offline: ~200 writes queue up.
    proxy.cut();
    await eventually(() => assert.equal(client?.sync.status.connected, false), WAIT);
    const created = new Map<string, string>();
    const writing = Date.now();
    for (let i = 0; i < PATIENTS; i++) {
      const first = `Crash${i}`;
      const { uuid } = await client.patients.create({ first_name: first, last_name: 'Upload' });
      created.set(uuid, first);
      if (i % 30 === 29) {
        // Interleaved with the creations: the timer and the mileage of the visit.
        const k = (i + 1) / 30 - 1;
        if (k < STEPS.length) await client.visits.recordTimerEvents(visit.uuid, [ev(STEPS[k] as (typeof STEPS)[number], `${today}T08:${String(10 * k).padStart(2, '0')}:00.000Z`)]);
      }
      if (i % 15 === 7) {
        const m = (i - 7) / 15;
        if (m < MILEAGE) await client.visits.setMileage(visit.uuid, { total_miles: 10 + m, recorded_at: `${today}T12:${String(m).padStart(2, '0')}:00.000Z` });
      }
    }
    const queued = client.sync.status.pending;
    t.diagnostic(`${queued} writes queued offline in ${Date.now() - writing} ms`);
    assert.equal(queued, PATIENTS + STEPS.length + MILEAGE);

    // Online: the process dies as the first acknowledgements come in. Then once more, as the
    // device says hello to the restarted server and resumes its upload.
    let url2 = url;
    /**
     * After the device could reach a restarted server (the proxy pointed at it), when it first
     * did: read once it is connected, so the proxy has recorded that connection.
     */
    const reachedAfter = (since: number) => {
      const at = proxy?.reached.find((a) => a >= since);
      assert.ok(at !== undefined, 'the device reached the restarted server');
      const ms = at - since;
      assert.ok(ms <= DEVICE_BACKOFF.maxMs + REACH_SLACK_MS, `the device first reached the restarted server ${ms} ms after it could (backoff ceiling ${DEVICE_BACKOFF.maxMs} ms)`);
      return ms;
    };
    for (let round = 1; round <= KILLS; round++) {
      let acks = 0;
      let killed = false;
      const pid = server.pid;
      const kill = () => {
        if (killed) return;
        killed = true;
        process.kill(pid, 'SIGKILL');
      };
      const offAck = client.sync.on('ack', () => {
        acks++;
        if (round === 1) kill();
      });
      const offStatus = client.sync.on('status', (s) => {
        if (round > 1 && s.connected) kill();
      });
      const online = Date.now();
      if (round === 1) proxy.restore();
      else proxy.retarget(url2);
      const trace: string[] = [];
      const offTrace = client.sync.on('status', (s) => {
        if (s.lastError) trace.push(`${Date.now() - online} ms ${s.lastError.code}: ${s.lastError.message}`);
      });
      // When no ack comes, what the device and the server were doing is the only clue.
      await eventually(() => assert.ok(killed, `round ${round}: no kill yet`), WAIT).catch((err: unknown) => {
        throw new Error(`${String(err)}\ndevice errors:\n${[...new Set(trace)].slice(-40).join('\n')}\nserver log:\n${server.stderr().slice(-6000)}`);
      });
      offTrace();
      t.diagnostic(`kill ${round}: ${Date.now() - online} ms after the device could reach the server`);
      // Round 2's kill came once the device was connected to the restarted server.
      if (round > 1) t.diagnostic(`restart ${round - 1}: the device reached it ${reachedAfter(online)} ms after it could`);
      assert.equal((await server.exited).signal, 'SIGKILL');
      // Acks already in the socket's buffers may still be read after the kill.
      await eventually(() => assert.equal(client?.sync.status.connected, false), WAIT);
      offAck();
      offStatus();
      const pending = client.sync.status.pending;
      t.diagnostic(`kill ${round}: ${acks} acks read, ${pending} of ${queued} writes pending`);
      if (round === 1) assert.ok(pending > 0, `the kill came mid-upload (${acks} acks, ${pending} pending)`);
      // A new process on the same data: another port, the same address for the device.
      const started = Date.now();
      server = spawnServer(env);
      url2 = await server.url(WAIT.timeoutMs);
      t.diagnostic(`restart ${round}: listening after ${Date.now() - started} ms`);
    }
    proxy.retarget(url2);
    const resumed = Date.now();
    await client.sync.whenSynced(WAIT);
    t.diagnostic(`restart ${KILLS}: the device reached it ${reachedAfter(resumed)} ms after it could`);
    t.diagnostic(`synced ${Date.now() - resumed} ms after the last restart`);

    assert.equal(client.sync.status.pending, 0, 'the outbox is empty');
    assert.deepEqual(await client.rejections.list(), [], 'nothing refused: a replayed create would be id_taken');
    const token = (await call<{ token: string }>(url2, 'POST', '/sign-in', null, { email: account.email, password: account.password })).token;
    const patients = await allPatients(url2, token);
    const expected = [{ uuid: seed.uuid, first_name: 'Seed', last_name: 'Patient' }, ...[...created].map(([uuid, first]) => ({ uuid, first_name: first, last_name: 'Upload' }))];
    assert.deepEqual(byUuid(patients.map(patientView)), byUuid(expected), 'every patient once, as written');
    const details = await call<Visit>(url2, 'GET', `/visit-details/${visit.uuid}`, token);
    assert.deepEqual(details.timer_events.map((e) => e.event_type), [...STEPS]);
    assert.equal(details.mileage?.total_miles, 10 + MILEAGE - 1, 'the latest mileage entry');
    assert.equal(details.mileage?.recorded_at && new Date(details.mileage.recorded_at).toISOString(), `${today}T12:${String(MILEAGE - 1).padStart(2, '0')}:00.000Z`);

    // The device reads what the server holds.
    await eventually(async () => {
      assert.deepEqual(byUuid((await client!.patients.list()).map(patientView)), byUuid(patients.map(patientView)));
      assert.deepEqual(visitView((await client!.visits.get(visit.uuid)) as Visit), visitView(details));
      assert.equal((await client!.visits.receipt(visit.uuid)).state, 'acknowledged');
    }, WAIT);

    // The server's own log says why a stop was not clean (the grace period passed: exit 1).
    const stopping = Date.now();
    const stopped = await server.stop();
    t.diagnostic(`stopped (SIGTERM) in ${Date.now() - stopping} ms, exit ${stopped.code}`);
    const told = server.logs().filter((l) => Number(l.level) >= 40 || /shutting down/.test(String(l.msg)));
    assert.equal(stopped.code, 0, `the server stopped cleanly; what it logged at warn and above:\n${told.map((l) => JSON.stringify(l)).join('\n')}\n${server.stderr()}`);
  });
}
