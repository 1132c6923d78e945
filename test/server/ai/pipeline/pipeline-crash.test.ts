/**
 * A job survives `kill -9` of the process mid-job: the server is killed while the STT
 * stand-in holds the job's request open; the restarted server releases the dead worker's lock
 * (PGlite: under the data-dir lock; PostgreSQL: the dead node's liveness key is free) and the
 * run completes exactly once — on both databases, with real server processes.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import pg from 'pg';
import { startWorkerLiveness } from '../../../../server/src/jobs/worker-liveness.ts';
import { backends, serverDataDir } from '../../../helpers/backends.ts';
import { eventually } from '../../../helpers/eventually.ts';
import { spawnServer, type ServerProcess } from '../../../helpers/processes.ts';
import { newAccount } from '../../../helpers/test-server.ts';
import { spokenWav, today } from './pipeline-fixtures.ts';
import { startSttStandIn, verboseJson } from './stt-stand-in.ts';

const API = '/api/therapist/v1';

async function call(url: string, method: string, pathname: string, token: string | null, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}${API}${pathname}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: await res.json() };
}

for (const backend of backends) {
  test(`kill -9 mid-job: after restart the run completes exactly once [${backend.name}]`, async () => {
    const dataDir = await serverDataDir('fieldchart-ai-crash-', backend.name === 'postgres');
    const db = backend.name === 'postgres' ? await backend.open() : null;
    const stt = await startSttStandIn();
    let hold: (() => void) | null = null;
    // The first request is held open (the job is mid-STT when the process dies); later ones answer at once.
    stt.script(
      () => new Promise((resolve) => (hold = () => resolve({ status: 503, text: 'gone' }))),
      { status: 200, json: verboseJson([{ start: 0, end: 3, text: 'Patient walked fifty feet with a walker.' }]) },
    );
    const env = { FIELDCHART_DATA_DIR: dataDir, DATABASE_URL: db?.url ?? undefined, STT_URL: stt.url, LOG_LEVEL: 'info', WORKER_CONCURRENCY: '2' };
    let server: ServerProcess | null = spawnServer(env);
    after(async () => {
      await server?.stop('SIGKILL');
      (hold as (() => void) | null)?.();
      await stt.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
      await db?.drop();
    });
    let url = await server.url();

    const reg = await call(url, 'POST', '/register', null, newAccount());
    assert.equal(reg.status, 200);
    const token = reg.body.data.token as string;
    const patient = await call(url, 'POST', '/patient/create', token, { first_name: 'Ada', last_name: 'Crash' });
    const visit = await call(url, 'POST', '/schedule-visit-request-save', token, { patient_uuid: patient.body.data.uuid, visit_date: today(), start_time: '09:00' });
    assert.equal(visit.status, 200, JSON.stringify(visit.body));

    const form = new FormData();
    form.append('schedule_uuid', visit.body.data.uuid);
    form.append('discipline', 'PT');
    form.append('encounter_type', 'daily_note');
    form.append('audio', new Blob([new Uint8Array(spokenWav('Short test.', 'short'))], { type: 'audio/wav' }), 'v.wav');
    const up = await fetch(`${url}${API}/ai/process-audio`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
    assert.equal(up.status, 200);
    const id = ((await up.json()) as { data: { transcription_uuid: string } }).data.transcription_uuid;

    await eventually(() => assert.equal(stt.requests.length, 1, 'the job reached STT'), { timeoutMs: 60_000 });
    if (db) {
      // Another node's sweep while this one lives and holds the job: nothing is released.
      const pool = new pg.Pool({ connectionString: db.url as string, max: 2 });
      const other = await startWorkerLiveness({ connectionString: db.url as string, pool });
      try {
        assert.equal(await other.sweep(), 0, 'a live node keeps its jobs');
      } finally {
        await other.close();
        await pool.end();
      }
    }
    process.kill(server.pid, 'SIGKILL');
    await server.exited;

    server = spawnServer(env);
    url = await server.url();
    const done = await eventually(
      async () => {
        const s = await call(url, 'GET', `/ai/status/${id}`, token);
        assert.equal(s.body.data?.status, 'completed', JSON.stringify(s.body));
        return s.body.data;
      },
      { timeoutMs: 90_000, intervalMs: 200 },
    );
    assert.equal(done.attempts, 2, 'one run died, one finished');
    assert.match(done.raw_transcript, /fifty feet/);
    assert.equal(stt.requests.length, 2, 'the job ran once more after the restart, not more');
    // A graceful stop afterwards leaves no queued or locked job behind that would run it again.
    if (db) {
      const { default: postgres } = await import('postgres');
      const sql = postgres(db.url as string, { max: 1 });
      try {
        const [row] = await sql`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'ai_process_audio'`;
        assert.equal(row?.n, 0);
        const [live] = await sql`select count(*)::int as n from job_workers`;
        assert.ok((live?.n ?? 0) >= 1, 'the live node recorded its workers');
      } finally {
        await sql.end();
      }
    }
  });
}
