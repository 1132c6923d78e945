import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { forEachBackend, backends } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { helloSync } from '../helpers/sync-socket.ts';
import { registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';

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
