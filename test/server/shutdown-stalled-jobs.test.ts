/**
 * A shutdown while a job waits on an outside service that stopped answering. The server's stop
 * has SHUTDOWN_GRACE_MS; after it, `npm start` exits 1 without closing its database. So a
 * job's wait must not outlast it: the send_mail job gives up its SMTP connection, and push_send
 * its FCM request, when its abort signal fires, and the worker fails any job still running at
 * the end of its share of the grace (jobs/worker.ts). Either way the mail or the notification
 * is kept and the job retried: nothing is lost.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { test, type TestContext } from 'node:test';
import pg from 'pg';
import { startWorker } from '../../server/src/jobs/worker.ts';
import { openJobQueuePool } from '../../server/src/jobs/job-queue-pool.ts';
import type { Services } from '@fieldchart/server';
import { forEachBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { startSilentRelay } from '../helpers/smtp-relay.ts';
import { newAccount, startTestServer, type TestServer } from '../helpers/test-server.ts';

/** FCM's two endpoints, where messages:send takes the request and never answers. */
async function startSilentFcm(): Promise<{ url: string; sends: () => number; close(): Promise<void> }> {
  let sends = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url !== '/token') return void sends++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ access_token: 'ya29.silent', expires_in: 3599, token_type: 'Bearer' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    sends: () => sends,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface JobRow {
  attempts: number;
  locked_at: string | null;
  last_error: string | null;
}

/**
 * Stops `server`, which must end within `graceMs`. On PostgreSQL (the embedded database closes
 * with the server) the task's one job must be kept, tried once and released for a retry;
 * `more` checks the rest on the same connection. Answers the try's recorded error (PGlite: null).
 */
async function stopWithStalledJob(
  t: TestContext,
  server: TestServer,
  opts: { graceMs: number; task: string; before?: string; more?: (client: pg.Client) => Promise<void> },
): Promise<string | null> {
  const started = performance.now();
  await server.runtime.close();
  const ms = performance.now() - started;
  t.diagnostic(`the stop took ${ms.toFixed(0)} ms (grace ${opts.graceMs} ms${opts.before ? `; ${opts.before}` : ''})`);
  assert.ok(ms < opts.graceMs, `the stop took ${ms.toFixed(0)} ms, more than its ${opts.graceMs} ms grace`);
  if (!server.db.url) return null;
  const client = new pg.Client({ connectionString: server.db.url });
  await client.connect();
  try {
    const jobs = await client.query<JobRow>(`select attempts, locked_at, last_error from graphile_worker.jobs where task_identifier = $1`, [opts.task]);
    assert.equal(jobs.rows.length, 1, 'the job is kept');
    const [job] = jobs.rows as [JobRow];
    assert.equal(job.attempts, 1);
    assert.equal(job.locked_at, null, 'released: another node, or this one restarted, retries it');
    assert.ok(job.last_error, 'the try is recorded as failed');
    await opts.more?.(client);
    return job.last_error;
  } finally {
    await client.end();
  }
}

forEachBackend('shutdown with a job stalled on an outside service', (backend) => {
  test('a mail stalled on a silent SMTP relay: the stop ends within its grace, the mail kept and its job retried', async (t) => {
    const relay = await startSilentRelay();
    const graceMs = 6000;
    const server = await startTestServer(backend, { env: { SMTP_URL: relay.url, SHUTDOWN_GRACE_MS: String(graceMs) } });
    let closed = false;
    try {
      const account = newAccount();
      assert.equal((await server.api('POST', '/register', { body: account })).status, 200);
      assert.equal((await server.api('POST', '/forgot-password/send-otp', { body: { email: account.email } })).status, 200);
      // The reset code's mail job is on the relay's line, waiting for a greeting.
      await eventually(() => assert.ok(relay.connections() > 0, 'the send_mail job reached the relay'), { timeoutMs: 20_000 });
      closed = true;
      await stopWithStalledJob(t, server, {
        graceMs,
        task: 'send_mail',
        before: '30.5 s before the job aborted with it',
        async more(client) {
          const mails = await client.query<{ status: string; kept: boolean; attempts: number }>(
            `select status, (text_body is not null or phi_enc is not null) as kept, attempts from mail_outbox`,
          );
          assert.deepEqual(mails.rows, [{ status: 'retrying', kept: true, attempts: 1 }], 'the message is kept for the next try');
        },
      });
    } finally {
      if (!closed) await server.runtime.close();
      await server.db.drop().catch(() => {});
      await server.mail.close();
      await relay.close();
    }
  });

  test('a push stalled on a silent FCM: the send ends with its job abort signal, within the grace, the job kept for a retry', async (t) => {
    const fcm = await startSilentFcm();
    const graceMs = 6000;
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const serviceAccount = {
      type: 'service_account',
      project_id: 'fieldchart-test',
      client_email: 'push@fieldchart-test.iam.gserviceaccount.com',
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    };
    const server = await startTestServer(backend, {
      env: { FCM_SERVICE_ACCOUNT_JSON: JSON.stringify(serviceAccount), FCM_API_URL: fcm.url, FCM_TOKEN_URL: `${fcm.url}/token`, SHUTDOWN_GRACE_MS: String(graceMs) },
    });
    let closed = false;
    try {
      const account = newAccount();
      const registered = await server.api('POST', '/register', { body: account });
      assert.equal(registered.status, 200);
      const { token, user } = registered.body.data as { token: string; user: { uuid: string } };
      assert.equal((await server.api('POST', '/register-fcm-token', { token, body: { fcm_token: `phone:${'A1b2-C3d4_'.repeat(12)}` } })).status, 200);
      await server.runtime.services.notifications.record(server.runtime.database.db, { userId: user.uuid, type: 'note_ready', data: {} });
      // The push_send job's request is on FCM's line, waiting for an answer.
      await eventually(() => assert.ok(fcm.sends() > 0, 'the push_send job reached FCM'), { timeoutMs: 20_000 });
      closed = true;
      const lastError = await stopWithStalledJob(t, server, {
        graceMs,
        task: 'push_send',
        before: '3.1–3.3 s before the send ended with its job, at the worker deadline',
        async more(client) {
          const kept = await client.query<{ n: number }>(`select count(*)::int as n from notifications`);
          assert.equal(kept.rows[0]?.n, 1, 'the notification is kept');
        },
      });
      // Ended by its abort signal, not failed by the worker's deadline ("the server is shutting down").
      if (lastError !== null) assert.match(lastError, /abort/i, `the try ended with: ${lastError}`);
    } finally {
      if (!closed) await server.runtime.close();
      await server.db.drop().catch(() => {});
      await server.mail.close();
      await fcm.close();
    }
  });

  test('a job that ignores its abort signal is failed at the end of the stop, and released for a retry', async (t) => {
    const server = await startTestServer(backend, { env: { WORKER_ENABLED: 'false' } });
    const pool = openJobQueuePool(server.config, server.runtime.database, 3);
    pool.on('error', () => {});
    let running = false;
    // A stand-in for a service whose call never returns and knows nothing of signals.
    const services = { mail: { deliver: () => ((running = true), new Promise<never>(() => {})) } } as unknown as Services;
    const stopWithinMs = 1500;
    const worker = await startWorker({ pgPool: pool, services, concurrency: 1, log: server.runtime.app.log, stopWithinMs });
    try {
      await pool.query(`select graphile_worker.add_job('send_mail', json_build_object('mail_id', gen_random_uuid()))`);
      await eventually(() => assert.ok(running, 'the job is running'), { timeoutMs: 20_000 });
      const started = performance.now();
      await worker.stop();
      const ms = performance.now() - started;
      t.diagnostic(`the stop took ${ms.toFixed(0)} ms (aim ${stopWithinMs} ms; it waited for ever before)`);
      // The forceful stop's own work (one statement failing the job) may take a while on a loaded machine.
      assert.ok(ms >= stopWithinMs * 0.5 && ms < stopWithinMs + 4000, `the stop took ${ms.toFixed(0)} ms (aim ${stopWithinMs} ms)`);
      const { rows } = await pool.query<JobRow>(`select attempts, locked_at, last_error from graphile_worker.jobs where task_identifier = 'send_mail'`);
      assert.equal(rows.length, 1, 'the job is kept');
      const [job] = rows as [JobRow];
      assert.equal(job.attempts, 1);
      assert.equal(job.locked_at, null, 'released for a retry');
      assert.ok(job.last_error);
    } finally {
      await worker.stop();
      await pool.end();
      await server.close();
    }
  });
});
