/**
 * The CLI's pipeline commands: `fieldchart worker` (a separate worker node running the AI jobs
 * on PostgreSQL while the API node runs none; refusing a data dir a process holds on the
 * embedded database; SIGTERM stops it cleanly) and `fieldchart ai transcribe FILE`.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { backends, serverDataDir } from '../../../helpers/backends.ts';
import { eventually } from '../../../helpers/eventually.ts';
import { TEST_NODE_FLAGS } from '../../../helpers/node-flags.ts';
import { childEnv, repoRoot, runCli } from '../../../helpers/processes.ts';
import { startTestServer } from '../../../helpers/test-server.ts';
import { clinicianWithVisit, spokenWav, statusOf, submitted } from './pipeline-fixtures.ts';
import { startSttStandIn, verboseJson, type SttStandIn } from './stt-stand-in.ts';

let stt: SttStandIn;
before(async () => {
  stt = await startSttStandIn();
});
after(async () => {
  await stt.close();
});

function spawnWorker(env: Record<string, string | undefined>) {
  const child: ChildProcess = spawn(process.execPath, [...TEST_NODE_FLAGS, path.join(repoRoot, 'cli/bin/fieldchart.js'), 'worker'], {
    cwd: repoRoot,
    env: childEnv({ LOG_LEVEL: 'info', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    output: () => out,
    exited,
    running: () => eventually(() => assert.match(out, /Fieldchart worker running/), { timeoutMs: 60_000, intervalMs: 50 }),
  };
}

describe('fieldchart ai transcribe', () => {
  test('prints the transcript with timings (--json), through the configured engine', async () => {
    stt.script({ status: 200, json: verboseJson([{ start: 0, end: 1.5, text: ' Pain four of ten.' }, { start: 1.5, end: 2.25, text: ' Walked fifty feet.' }]) });
    const file = path.join(os.tmpdir(), `fc-transcribe-${process.pid}.wav`);
    fs.writeFileSync(file, spokenWav('Short test.', 'short'));
    try {
      const run = await runCli(['--json', 'ai', 'transcribe', file], { STT_URL: stt.url, FIELDCHART_DATA_DIR: os.tmpdir() });
      assert.equal(run.code, 0, run.stderr);
      const out = JSON.parse(run.stdout);
      assert.equal(out.engine, 'openai:whisper-1');
      assert.equal(out.text, 'Pain four of ten. Walked fifty feet.');
      assert.deepEqual(out.segments.map((s: { start_ms: number; end_ms: number }) => [s.start_ms, s.end_ms]), [[0, 1500], [1500, 2250]]);
      assert.ok(out.duration_ms > 0);
      const text = await runCli(['ai', 'transcribe', file], { STT_URL: stt.url });
      assert.match(text.stdout, /\[00:00\.00 → 00:01\.50\] Pain four of ten\./);
      const none = await runCli(['ai', 'transcribe', file], { STT_ENGINE: 'none' });
      assert.equal(none.code, 78);
      assert.match(none.stderr, /STT_URL/);
      const notAudio = await runCli(['ai', 'transcribe', path.join(repoRoot, 'package.json')], { STT_URL: stt.url });
      assert.equal(notAudio.code, 2);
    } finally {
      fs.rmSync(file, { force: true });
    }
  });
});

const postgres = backends.find((b) => b.name === 'postgres');
const pglite = backends.find((b) => b.name === 'pglite');

describe('fieldchart worker', () => {
  test('PostgreSQL: a worker node runs the AI jobs of an API node that runs none, and stops on SIGTERM', { skip: !postgres && 'TEST_DATABASE_URL not set' }, async () => {
    stt.script({ status: 200, json: verboseJson([{ start: 0, end: 2, text: 'Patient walked fifty feet with a walker.' }]) });
    const server = await startTestServer(postgres!, { env: { WORKER_ENABLED: 'false', STT_URL: stt.url } });
    const worker = spawnWorker({ DATABASE_URL: server.db.url ?? undefined, FIELDCHART_DATA_DIR: server.dataDir, STT_URL: stt.url });
    try {
      await worker.running();
      const { user, visit } = await clinicianWithVisit(server);
      const id = await submitted(server, user.token, { schedule_uuid: visit, discipline: 'PT', encounter_type: 'daily_note' }, spokenWav('Short test.', 'short'));
      const done = await eventually(
        async () => {
          const res = await statusOf(server, user.token, id);
          assert.equal(res.body.data.status, 'completed');
          return res.body.data;
        },
        { timeoutMs: 60_000, intervalMs: 100 },
      );
      assert.match(done.raw_transcript, /fifty feet/);
      worker.child.kill('SIGTERM');
      assert.equal(await worker.exited, 0, worker.output());
    } finally {
      worker.child.kill('SIGKILL');
      await server.close();
    }
  });

  test('embedded database: runs on a free data dir, refuses one a process holds, stops on SIGTERM', { skip: !pglite }, async () => {
    const dataDir = await serverDataDir('fc-worker-', false);
    const first = spawnWorker({ FIELDCHART_DATA_DIR: dataDir, STT_URL: stt.url });
    try {
      await first.running();
      const second = await runCli(['worker'], { FIELDCHART_DATA_DIR: dataDir });
      assert.equal(second.code, 75, second.stderr);
      assert.match(second.stderr, /DATABASE_URL/);
      first.child.kill('SIGTERM');
      assert.equal(await first.exited, 0, first.output());
      assert.equal(fs.existsSync(path.join(dataDir, 'fieldchart.lock')), false, 'the lock is released');
    } finally {
      first.child.kill('SIGKILL');
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
