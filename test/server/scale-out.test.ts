/**
 * Scale-out (docs/operations.md, "Scaling"): two API nodes (WORKER_ENABLED=false) and two
 * `fieldchart worker` processes on one fresh PostgreSQL database, sharing keys (PHI_KEYS,
 * JWT_PRIVATE_JWKS) and the audio volume, behind a round-robin TCP proxy. Real processes,
 * real client library devices, a real SMTP conversation, real ffmpeg; speech to text is the
 * OpenAI-compatible stand-in so a job can be held mid-run and the worker running it told
 * apart (each worker is given its own STT path).
 *
 * PostgreSQL only: the embedded database belongs to one process.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { exportJWK, generateKeyPair } from 'jose';
import type { FieldchartClient } from '../../client-lib/src/index.ts';
import pg from 'pg';
import { startWorkerLiveness } from '../../server/src/jobs/worker-liveness.ts';
import { generateKeyFile } from '../../server/src/security/phi-keyring.ts';
import { openClient } from '../client-lib/support.ts';
import { backends, type TestDatabase } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { apiRequest, freePort, killAllServers, spawnServer, type ServerProcess } from '../helpers/processes.ts';
import { startRoundRobinProxy, type RoundRobinProxy } from '../helpers/round-robin-proxy.ts';
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.ts';
import { API, newAccount } from '../helpers/test-server.ts';
import { spokenWav, today } from './ai/pipeline/pipeline-fixtures.ts';
import { startSttStandIn, verboseJson, type SttStandIn } from './ai/pipeline/stt-stand-in.ts';

const postgres = backends.find((b) => b.name === 'postgres');
const METRICS_TOKEN = 'scale-out-metrics-token-0123456789';

/** A running API node or worker, with the name the test gives it. */
interface Node {
  readonly name: string;
  readonly process: ServerProcess;
}

/** The sync sockets a node holds (its own /metrics, asked directly, not through the proxy). */
async function syncSockets(nodeUrl: string): Promise<number> {
  const res = await fetch(`${nodeUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  assert.equal(res.status, 200);
  const m = /^fieldchart_sync_sockets (\d+)$/m.exec(await res.text());
  assert.ok(m, 'the node reports fieldchart_sync_sockets');
  return Number(m[1]);
}

/** graphile-worker's "Completed task <id> (<task>, …" lines of one worker: job id → task. */
function completedJobs(worker: ServerProcess): Array<{ id: string; task: string }> {
  return worker
    .logs()
    .flatMap((l) => {
      const m = typeof l.msg === 'string' ? /^Completed task (\d+) \(([a-z_]+),/.exec(l.msg) : null;
      return m ? [{ id: m[1] as string, task: m[2] as string }] : [];
    });
}

describe('scale-out: two API nodes and two workers behind a round-robin proxy', { skip: !postgres && 'PostgreSQL only (TEST_DATABASE_URL): one process owns an embedded database' }, () => {
  let db: TestDatabase;
  let dataDir: string;
  let smtp: SmtpSink;
  let stt: SttStandIn;
  let proxy: RoundRobinProxy;
  let apiNodes: Array<Node & { url: string }> = [];
  let workers: Node[] = [];
  const devices: FieldchartClient[] = [];
  let releaseHeldStt: (() => void) | null = null;

  // Shared by the steps below, in order.
  let clinician: { email: string; password: string; token: string };
  let visit: string;
  /** The API node device A's socket is on, and the other one (device B's). */
  let nodeOfA: Node & { url: string };
  let nodeOfB: Node & { url: string };
  let transcription: string;
  let booted = '';
  let devicesOpen = '';
  let opening: Promise<void> | null = null;

  /** Seconds since the suite started, for the phase figures it prints. */
  const started = Date.now();
  const at = () => `${((Date.now() - started) / 1000).toFixed(1)} s`;

  before(async () => {
    db = await postgres!.open();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-scale-out-'));
    smtp = await startSmtpSink();
    stt = await startSttStandIn();
    // The first transcription is held open (its worker is killed mid-run); later ones answer at once.
    stt.script(
      () => new Promise((resolve) => (releaseHeldStt = () => resolve({ status: 503, text: 'released' }))),
      { status: 200, json: verboseJson([{ start: 0, end: 2, text: 'Patient walked fifty feet with a walker.' }]) },
    );
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = { ...(await exportJWK(privateKey)), kid: 'scale-out-1', alg: 'ES256', use: 'sig' };
    // What every node of one deployment shares: database, keys, the audio volume, mail relay.
    const shared = {
      DATABASE_URL: db.url as string,
      DATABASE_POOL_SIZE: '4',
      FIELDCHART_DATA_DIR: dataDir,
      PHI_KEYS: JSON.stringify(generateKeyFile()),
      JWT_PRIVATE_JWKS: JSON.stringify({ keys: [jwk] }),
      SMTP_URL: smtp.url,
      LOG_LEVEL: 'info',
      SHUTDOWN_GRACE_MS: '3000',
    };
    // Ports chosen first, so the proxy (and the devices' databases) can be ready while the nodes boot.
    const ports = [await freePort(), await freePort()];
    const api = (name: string, port: number) => ({
      name,
      process: spawnServer({ ...shared, PORT: String(port), WORKER_ENABLED: 'false', METRICS_TOKEN, STT_URL: `${stt.url}/${name}` }),
    });
    const worker = (name: string): Node => ({
      name,
      process: spawnServer({ ...shared, STT_URL: `${stt.url}/${name}`, WORKER_CONCURRENCY: '2', WORKER_SWEEP_INTERVAL_MS: '1000' }, { via: 'worker' }),
    });
    const starting = [api('api-1', ports[0]!), api('api-2', ports[1]!)];
    workers = [worker('worker-1'), worker('worker-2')];
    proxy = await startRoundRobinProxy(ports.map((port) => `http://127.0.0.1:${port}`));
    // Two devices (each its own PGlite, created in this process): opened during the boot, signed in later.
    opening = Promise.all([openClient(proxy.url), openClient(proxy.url)]).then((opened) => {
      devices.push(...opened);
      devicesOpen = at();
    });
    apiNodes = await Promise.all(starting.map(async (n) => ({ ...n, url: await n.process.url(90_000) })));
    await Promise.all(
      workers.map(async (w) => {
        const state = await eventually(
          () => {
            if (w.process.logs().some((l) => l.msg === 'Fieldchart worker running')) return 'running';
            // A worker that dies while booting fails the suite at once, with its output.
            if (w.process.child.exitCode !== null || w.process.child.signalCode !== null) return 'exited';
            throw new Error(`${w.name} not running yet:\n${w.process.stderr()}`);
          },
          { timeoutMs: 90_000, intervalMs: 50 },
        );
        if (state === 'exited') throw new Error(`${w.name} exited while booting:\n${w.process.stderr()}\n${w.process.stdout()}`);
      }),
    );
    assert.deepEqual(apiNodes.map((n) => new URL(n.url).port), ports.map(String));
    booted = at();
    await opening;
  });

  after(async () => {
    await opening?.catch(() => {});
    for (const d of devices) await d.close().catch(() => {});
    (releaseHeldStt as (() => void) | null)?.();
    await proxy?.close();
    await killAllServers();
    await stt?.close();
    await smtp?.close();
    await db?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const call = (method: string, pathname: string, opts: { body?: unknown; token?: string } = {}) => apiRequest(proxy.url, method, pathname, opts);

  test('sync: two devices through the proxy land on different nodes; a write and a draft edit cross between them', async (t) => {
    const account = newAccount();
    const reg = await call('POST', '/register', { body: account });
    assert.equal(reg.status, 200, JSON.stringify(reg.body));
    clinician = { email: account.email, password: account.password, token: reg.body.data.token as string };
    assert.equal((await call('PUT', '/my-settings', { token: clinician.token, body: { time_zone: 'UTC' } })).status, 200);
    const patient = await call('POST', '/patient/create', { token: clinician.token, body: { first_name: 'Ada', last_name: 'Twonode' } });
    assert.equal(patient.status, 200, JSON.stringify(patient.body));
    const scheduled = await call('POST', '/schedule-visit-request-save', {
      token: clinician.token,
      body: { patient_uuid: patient.body.data.uuid, visit_date: today(), start_time: '09:00' },
    });
    assert.equal(scheduled.status, 200, JSON.stringify(scheduled.body));
    visit = scheduled.body.data.uuid as string;

    const counts = () => Promise.all(apiNodes.map((n) => syncSockets(n.url)));
    // Device A first, alone: the node whose socket count rises is A's.
    const [a, b] = devices as [FieldchartClient, FieldchartClient];
    await a.signIn({ email: clinician.email, password: clinician.password });
    await a.sync.whenSynced({ timeoutMs: 30_000 });
    const afterA = await eventually(async () => {
      const c = await counts();
      assert.deepEqual([...c].sort(), [0, 1], `one socket, on one node: ${c}`);
      return c;
    });
    nodeOfA = apiNodes[afterA.indexOf(1)]!;
    nodeOfB = apiNodes[afterA.indexOf(0)]!;

    await b.signIn({ email: clinician.email, password: clinician.password });
    await b.sync.whenSynced({ timeoutMs: 30_000 });
    // The proxy alternates connections, REST keep-alive ones included, so B's socket may have
    // been given A's node; a reconnect is a new connection and goes to the next node in turn.
    let reconnects = 0;
    for (;;) {
      try {
        await eventually(async () => assert.deepEqual(await counts(), [1, 1]), { timeoutMs: 3_000, intervalMs: 100 });
        break;
      } catch (err) {
        if (++reconnects > 6) throw err;
        b.sync.reconnect();
      }
    }
    t.diagnostic(`4 processes up at ${booted}; device databases open at ${devicesOpen}; both devices synced at ${at()}`);
    t.diagnostic(`device A on ${nodeOfA.name}, device B on ${nodeOfB.name} (${reconnects} reconnect(s) of B); proxy connections per node: ${proxy.accepted.join(', ')}`);

    // A write through A's node (a sync mutation) reaches B through the other node's feed.
    const created = await a.patients.create({ first_name: 'Cross', last_name: 'Node' });
    await eventually(async () => assert.ok((await b.patients.get(created.uuid))?.last_name === 'Node', 'B has the patient A created'), { timeoutMs: 20_000, intervalMs: 100 });

    // Draft edits on both devices at once converge to the same text on both.
    const docA = await a.drafts.open(visit);
    const docB = await b.drafts.open(visit);
    docA.getText('subjective').insert(0, 'Knee pain three of ten.');
    docB.getText('plan').insert(0, 'Continue home exercises.');
    docB.getText('subjective').insert(0, 'Slept well. ');
    const text = (doc: typeof docA) => ({ s: doc.getText('subjective').toString(), p: doc.getText('plan').toString() });
    await eventually(
      () => {
        assert.deepEqual(text(docA), text(docB));
        assert.equal(text(docA).p, 'Continue home exercises.');
        assert.match(text(docA).s, /Knee pain three of ten\./);
        assert.match(text(docA).s, /Slept well\. /);
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
  });

  test('jobs: mail and AI run exactly once across two workers; after kill -9 of one mid-job the other finishes the rest', async (t) => {
    assert.ok(visit, 'the sync step ran');
    // Three more clinicians, for password-reset mail.
    const others: string[] = [];
    for (let i = 0; i < 3; i++) {
      const account = newAccount();
      const reg = await call('POST', '/register', { body: account });
      assert.equal(reg.status, 200, JSON.stringify(reg.body));
      others.push(account.email);
    }
    const resetMails = () => smtp.messages.filter((m) => others.some((e) => m.to.includes(e)));

    // The AI run, through device A's node; its worker is held mid-transcription.
    const form = new FormData();
    form.append('schedule_uuid', visit);
    form.append('discipline', 'PT');
    form.append('encounter_type', 'daily_note');
    form.append('audio', new Blob([new Uint8Array(spokenWav('Short test.', 'short'))], { type: 'audio/wav' }), 'visit.wav');
    const up = await fetch(`${nodeOfA.url}${API}/ai/process-audio`, { method: 'POST', headers: { authorization: `Bearer ${clinician.token}` }, body: form });
    assert.equal(up.status, 200, await up.clone().text());
    transcription = ((await up.json()) as { data: { transcription_uuid: string } }).data.transcription_uuid;
    await eventually(() => assert.equal(stt.requests.length, 1, 'the AI job reached speech to text'), { timeoutMs: 30_000, intervalMs: 50 });
    const holder = workers.find((w) => stt.requests[0]!.path.startsWith(`/${w.name}/`));
    assert.ok(holder, `the STT request names its worker: ${stt.requests[0]!.path}`);
    const survivor = workers.find((w) => w !== holder)!;

    // Mail while both live: one reset each, through the proxy (so through both API nodes).
    for (const email of others) assert.equal((await call('POST', '/forgot-password/send-otp', { body: { email } })).status, 200);
    await eventually(() => assert.equal(resetMails().length, 3), { timeoutMs: 30_000, intervalMs: 50 });
    const sql = db.database.sql!;
    // Nothing but the held AI job is left in the queue when the worker dies.
    await eventually(async () => {
      const rows = await sql<Array<{ task: string; locked: boolean }>>`select task_identifier as task, locked_at is not null as locked from graphile_worker.jobs where task_identifier <> 'cleanup_expired'`;
      assert.deepEqual([...rows], [{ task: 'ai_process_audio', locked: true }]);
    }, { timeoutMs: 20_000, intervalMs: 100 });

    // A sweep while the holder lives releases nothing (its liveness key is held): the job is not run twice.
    const sweepPool = new pg.Pool({ connectionString: db.url as string, max: 2 });
    try {
      const other = await startWorkerLiveness({ connectionString: db.url as string, pool: sweepPool });
      try {
        assert.equal(await other.sweep(), 0, 'a live worker keeps its job');
      } finally {
        await other.close();
      }
    } finally {
      await sweepPool.end();
    }
    assert.equal(stt.requests.length, 1, 'no second run while the first worker lives');

    process.kill(holder.process.pid, 'SIGKILL');
    assert.equal((await holder.process.exited).signal, 'SIGKILL');

    // The rest: more mail, which only the survivor can send, and the held AI run.
    for (const email of others) assert.equal((await call('POST', '/forgot-password/send-otp', { body: { email } })).status, 200);
    const done = await eventually(
      async () => {
        const s = await call('GET', `/ai/status/${transcription}`, { token: clinician.token });
        assert.equal(s.body.data?.status, 'completed', JSON.stringify(s.body));
        return s.body.data;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    assert.equal(done.attempts, 2, 'the killed run and the one that finished');
    assert.match(done.raw_transcript, /fifty feet/);
    assert.deepEqual(
      stt.requests.map((r) => r.path.split('/')[1]),
      [holder.name, survivor.name],
      'transcribed once by the killed worker (never answered) and once by the survivor',
    );
    assert.ok(
      survivor.process.logs().some((l) => l.msg === 'released the jobs of dead workers'),
      'the surviving worker (no restart) released the dead one\'s job',
    );
    await eventually(() => assert.equal(resetMails().length, 6), { timeoutMs: 30_000, intervalMs: 50 });
    for (const email of others) assert.equal(resetMails().filter((m) => m.to.includes(email)).length, 2, 'two resets asked, two mails');

    // Exactly once: every job completed once over both workers' logs, every mail is one job, and the queue is empty.
    await eventually(async () => {
      const [left] = await sql<Array<{ n: number }>>`select count(*)::int as n from graphile_worker.jobs where task_identifier <> 'cleanup_expired'`;
      assert.equal(left?.n, 0, 'no job queued or locked');
    }, { timeoutMs: 20_000, intervalMs: 100 });
    const completions = workers.flatMap((w) => completedJobs(w.process).map((j) => ({ ...j, worker: w.name })));
    const perJob = new Map<string, number>();
    for (const c of completions) perJob.set(c.id, (perJob.get(c.id) ?? 0) + 1);
    assert.deepEqual([...perJob.entries()].filter(([, n]) => n !== 1), [], 'no job completed twice');
    const mails = completions.filter((c) => c.task === 'send_mail');
    assert.equal(mails.length, smtp.messages.length, 'one send_mail job per message received');
    const outbox = await sql<Array<{ status: string; n: number }>>`select status, count(*)::int as n from mail_outbox group by status`;
    assert.deepEqual([...outbox], [{ status: 'sent', n: smtp.messages.length }], 'every mail sent once, none pending');
    const ai = completions.filter((c) => c.task === 'ai_process_audio');
    assert.deepEqual(ai.map((c) => c.worker), [survivor.name], 'the AI job completed once, by the survivor');
    const spread = workers.map((w) => `${w.name}: ${completions.filter((c) => c.worker === w.name).map((c) => c.task).join(',') || 'none'}`);
    t.diagnostic(`${holder.name} killed mid-AI-job; completions by worker — ${spread.join('; ')}`);
    // The three mails asked after the kill can only have been sent by the survivor.
    assert.ok(mails.filter((c) => c.worker === survivor.name).length >= 3, 'the survivor sent the mail asked after the kill');
  });

  test('the AI note made by a worker reaches device B on the other node through the sync channel', async () => {
    const b = devices[1];
    assert.ok(b, 'the sync step ran');
    const [run] = await eventually(async () => {
      const notes = (await b.notifications.list()).filter((n) => n.type === 'note_ready');
      assert.equal(notes.length, 1, 'B has the note_ready notification');
      return notes;
    }, { timeoutMs: 20_000, intervalMs: 100 });
    assert.deepEqual(run!.data, { transcription_uuid: transcription, schedule_uuid: visit });
    // B is still on its own node: the notification came through that node's feed.
    assert.equal(await syncSockets(nodeOfB.url), 1);
    assert.equal(b.sync.status.connected, true);
  });
});
