import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../server/src/db/database.ts';
import { forEachBackend, backends } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { helloSync, nextFeed } from '../helpers/sync-socket.ts';
import { registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { createPatient, scheduleVisit, utcClinician } from './visits/visit-fixtures.ts';

const TOKEN = 'metrics-token-0123456789abcdef';

/** The value of one sample line `name{labels} value`, or null. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return null;
}

forEachBackend('metrics', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend, { env: { METRICS_TOKEN: TOKEN, METRICS_PORT: '0' } });
  });
  after(() => server.close());

  const scrape = async () => {
    const res = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    return res.text();
  };

  test('the API port serves /metrics to the token only, in the contract error shape otherwise', async () => {
    const none = await server.request('GET', '/metrics');
    assert.equal(none.status, 401);
    assert.deepEqual(none.body, { status: false, message: 'A valid metrics token is required', code: 'invalid_token' });
    const wrong = await server.request('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN.slice(0, -1)}x` } });
    assert.equal(wrong.status, 401);
    assert.match(await scrape(), /fieldchart_process_cpu_seconds_total/);
  });

  test('requests are counted and timed by route pattern and status, never by raw URL', async () => {
    const u = await registerUser(server);
    await server.api('GET', '/my-profile', { token: u.token });
    await server.api('GET', '/my-profile', { token: u.token });
    const missing = randomUUID();
    await server.api('GET', `/visit-details/${missing}`, { token: u.token });
    await server.request('GET', '/no-such-page');
    const text = await eventually(async () => {
      const t = await scrape();
      assert.ok((sample(t, 'fieldchart_http_requests_total', { method: 'GET', route: '/api/therapist/v1/my-profile', status: '200' }) ?? 0) >= 2, 'fewer than 2 GET /my-profile requests counted yet');
      return t;
    });
    assert.equal(sample(text, 'fieldchart_http_requests_total', { method: 'GET', route: '/api/therapist/v1/visit-details/:scheduleUuid', status: '404' }), 1);
    assert.equal(sample(text, 'fieldchart_http_requests_total', { route: 'unmatched', status: '404' }), 1);
    assert.ok(!text.includes(missing), 'ids are not labels');
    assert.ok((sample(text, 'fieldchart_http_request_duration_seconds_count', { route: '/api/therapist/v1/my-profile', status: '200' }) ?? 0) >= 2);
    assert.ok(sample(text, 'fieldchart_http_request_duration_seconds_bucket', { route: '/api/therapist/v1/my-profile', le: '+Inf' }) !== null);
  });

  test('sync figures: sockets, mutations by outcome, feed reads', async () => {
    const u = await registerUser(server);
    const { socket } = await helloSync(server, u.token, randomUUID());
    const now = new Date().toISOString();
    const patient = randomUUID();
    socket.send({ type: 'mutation', mutation_id: 1, name: 'patient.create', args: { uuid: patient, first_name: 'Mia', last_name: 'Metric' }, client_time: now });
    socket.send({ type: 'mutation', mutation_id: 2, name: 'visit.mileage', args: { uuid: randomUUID(), mileage: { total_miles: 3, recorded_at: now } }, client_time: now });
    await socket.next('ack', (m) => m.mutation_id === 1);
    await socket.next('reject', (m) => m.mutation_id === 2);
    const text = await scrape();
    assert.equal(sample(text, 'fieldchart_sync_sockets'), 1);
    assert.equal(sample(text, 'fieldchart_sync_queue_depth') !== null, true);
    assert.equal(sample(text, 'fieldchart_sync_mutations_total', { name: 'patient.create', outcome: 'applied' }), 1);
    assert.equal(sample(text, 'fieldchart_sync_mutations_total', { name: 'visit.mileage', outcome: 'refused' }), 1);
    assert.ok((sample(text, 'fieldchart_sync_feed_read_seconds_count') ?? 0) >= 1);
    socket.close();
    await eventually(async () => assert.equal(sample(await scrape(), 'fieldchart_sync_sockets'), 0));
  });

  test('feed reads by kind: the full diff, a poked table read alone, and a table read that declines', async () => {
    const user = await utcClinician(server);
    const patient = await createPatient(server, user);
    const today = new Date().toISOString().slice(0, 10);
    const visit = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today, start_time: '08:00' });
    const reads = async (read: string) => sample(await scrape(), 'fieldchart_sync_feed_read_seconds_count', { read }) ?? 0;
    const [full0, tables0, declined0] = [await reads('full'), await reads('tables'), await reads('declined')];
    const { socket } = await helloSync(server, user.token, randomUUID(), null, 3);
    await nextFeed(socket);
    assert.equal(await reads('full'), full0 + 1, 'the first run is a full diff');
    // Another writer's mileage: its poke names visit_mileage, read alone.
    const put = await server.api('PUT', `/visit/${visit}/mileage`, { token: user.token, body: { total_miles: 4, recorded_at: new Date().toISOString() } });
    assert.equal(put.status, 200);
    await nextFeed(socket);
    assert.equal(await reads('tables'), tables0 + 1, 'the mileage poke was read alone');
    assert.equal(await reads('full'), full0 + 1, 'and no full diff ran for it');
    // A visit new to the device brings its children: the table read declines, the full diff answers.
    await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today, start_time: '10:00' });
    await nextFeed(socket);
    assert.equal(await reads('declined'), declined0 + 1, 'the visits poke declined');
    assert.equal(await reads('full'), full0 + 2, 'and the full diff followed');
    socket.close();
  });

  test('a set lost and applied again one by one is counted once, after its transaction commits', async () => {
    const user = await utcClinician(server);
    const patient = await createPatient(server, user);
    const today = new Date().toISOString().slice(0, 10);
    const visit = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today, start_time: '08:00' });
    const db = server.runtime.services.unitOfWork.db;
    // The database refuses a statement writing two timer events of this visit at once: the
    // set's one insert fails, the batch goes again one by one, and each single row is taken.
    const fn = `fc_refuse_sets_${randomUUID().replaceAll('-', '')}`;
    await db.execute(sql.raw(`
      create function ${fn}() returns trigger language plpgsql as $$
      begin
        if (select count(*) from written where visit_id = '${visit}') > 1 then raise exception 'one row at a time'; end if;
        return null;
      end $$`));
    await db.execute(sql.raw(`
      create trigger ${fn} after insert on timer_events referencing new table as written for each statement execute function ${fn}();`));
    try {
      const before = await scrape();
      const count = (text: string, name: string, outcome: string) => sample(text, 'fieldchart_sync_mutations_total', { name, outcome }) ?? 0;
      const at = (minutes: number) => new Date(Date.now() - (30 - minutes) * 60_000).toISOString();
      const event = (event_type: string, minutes: number) => ({ schedule_uuid: visit, events: [{ event_type, event_time: at(minutes), latitude: 41.9, longitude: -87.6, accuracy: 8 }] });
      const mutations = [
        // One by one (not a set kind): applied in the first try, then again in the second.
        ['patient.update', { uuid: patient.uuid, first_name: 'Counted' }],
        ['visit.timer_events', event('start_travel', 0)],
        ['visit.timer_events', event('arrive', 10)],
      ].map(([name, args], i) => ({ mutation_id: i + 1, name, args, client_time: at(0) }));
      const res = await server.api('POST', '/sync/mutations', { token: user.token, body: { client_id: randomUUID(), protocol: 2, mutations } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(
        res.body.data.results.map((r: { type: string }) => r.type),
        ['ack', 'ack', 'ack'],
      );
      const [counted] = rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from timer_events where visit_id = ${visit}`));
      assert.equal(counted?.n, 2, 'both events written, one at a time');
      const text = await scrape();
      assert.equal(count(text, 'patient.update', 'applied') - count(before, 'patient.update', 'applied'), 1, 'the update counted once');
      assert.equal(count(text, 'visit.timer_events', 'applied') - count(before, 'visit.timer_events', 'applied'), 2, 'each event counted once');
    } finally {
      await db.execute(sql.raw(`drop trigger ${fn} on timer_events`));
      await db.execute(sql.raw(`drop function ${fn}()`));
    }
  });

  test('job figures come from the queue tables; pool figures from the job pool', async () => {
    const db = server.db.database.db;
    // A job due in an hour (queued), and one out of attempts (failed); the worker runs neither.
    await db.execute(sql`select graphile_worker.add_job('metrics-test', '{}'::json, run_at := now() + interval '1 hour')`);
    await db.execute(sql`select graphile_worker.add_job('metrics-test', '{}'::json, run_at := now() + interval '1 hour', max_attempts := 1, job_key := 'metrics-failed')`);
    await db.execute(sql`update graphile_worker._private_jobs set attempts = 1, last_error = 'boom' where key = 'metrics-failed'`);
    const text = await scrape();
    assert.ok((sample(text, 'fieldchart_jobs', { state: 'queued' }) ?? 0) >= 1);
    assert.equal(sample(text, 'fieldchart_jobs', { state: 'failed' }), 1);
    assert.equal(sample(text, 'fieldchart_jobs', { state: 'running' }) !== null, true);
    assert.ok((sample(text, 'fieldchart_db_pool_connections', { pool: 'jobs', state: 'total' }) ?? 0) >= 1);
    if (backend.name === 'postgres') assert.ok((sample(text, 'fieldchart_db_pool_connections', { pool: 'api', state: 'max' }) ?? 0) >= 1);
  });

  test('METRICS_PORT serves /metrics on its own address without a token', async () => {
    const base = server.runtime.metricsUrl;
    assert.ok(base?.startsWith('http://127.0.0.1:'));
    const res = await fetch(`${base}/metrics`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /fieldchart_http_requests_total/);
    const other = await fetch(`${base}/api/therapist/v1/my-profile`);
    assert.equal(other.status, 404);
    await other.arrayBuffer();
  });
});

test('without METRICS_TOKEN or METRICS_PORT there is no /metrics', async () => {
  const server = await startTestServer(backends[0]!);
  try {
    assert.equal((await server.request('GET', '/metrics', { headers: { authorization: `Bearer ${TOKEN}` } })).status, 404);
    assert.equal(server.runtime.metrics, null);
  } finally {
    await server.close();
  }
});
