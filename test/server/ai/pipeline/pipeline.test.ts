/**
 * The AI pipeline end to end on a real server, both databases: upload → Graphile Worker job →
 * STT → note generator → `completed` with every status field, or `failed` with an actionable
 * message; retries, /ai/retry, the 404/409/413/422 paths, tenant isolation, PHI at rest, and
 * the `ai_status` rows reaching a connected sync device.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { aiTranscriptions, auditLog } from '@fieldchart/schema/db';
import { aiStatus } from '@fieldchart/schema/api';
import { pocketsphinxInstalled } from '../../../../server/src/services/ai/stt/index.ts';
import { forEachBackend } from '../../../helpers/backends.ts';
import { eventually } from '../../../helpers/eventually.ts';
import { helloSync, nextFeed } from '../../../helpers/sync-socket.ts';
import { startTestServer, type TestServer } from '../../../helpers/test-server.ts';
import { clinicianWithVisit, processAudio, spokenWav, statusOf, submitted } from './pipeline-fixtures.ts';
import { startSttStandIn, verboseJson, type SttStandIn } from './stt-stand-in.ts';

const DICTATION =
  'Patient reports pain of four out of ten in the right knee. Blood pressure one thirty two over eighty. Patient ambulated one hundred fifty feet with a rolling walker and contact guard assist. Continue home exercise program three times a week.';

function assertCompleted(record: any) {
  const parsed = aiStatus.safeParse(record);
  assert.ok(parsed.success, JSON.stringify(parsed.error?.issues));
  assert.equal(record.status, 'completed', JSON.stringify(record));
  assert.equal(record.error_message, null);
  assert.equal(typeof record.raw_transcript, 'string');
  assert.ok(record.raw_transcript.length > 0);
  for (const section of ['subjective', 'objective', 'assessment', 'plan']) {
    assert.equal(typeof record.generated_soap[section], 'string');
    assert.equal(typeof record.confidence_summary[section], 'number');
    assert.ok(record.confidence_summary[section] >= 0 && record.confidence_summary[section] <= 1);
    for (const entry of record.source_map[section]) {
      // Every generated sentence points into the transcript; a span that does not is flagged.
      assert.ok(entry.char_start >= 0 && entry.char_end <= record.raw_transcript.length && entry.char_end > entry.char_start, JSON.stringify(entry));
      if (!entry.unsupported) assert.ok(record.raw_transcript.slice(entry.char_start, entry.char_end).length > 0);
    }
  }
  assert.ok(Array.isArray(record.verification_flags));
  assert.ok(Array.isArray(record.not_mentioned));
  assert.ok(record.finished_at);
}

forEachBackend('AI pipeline', (backend) => {
  let stt: SttStandIn;
  let server: TestServer;
  let bare: TestServer;
  let offline: TestServer | null = null;
  const sphinx = pocketsphinxInstalled({ bin: 'pocketsphinx_continuous', modelDir: '/usr/share/pocketsphinx/model/en-us' });

  before(async () => {
    stt = await startSttStandIn();
    server = await startTestServer(backend, { env: { STT_URL: stt.url, STT_API_KEY: 'sk-local', AI_JOB_MAX_ATTEMPTS: '3', AI_AUDIO_MAX_BYTES: String(2 * 1024 * 1024) } });
    bare = await startTestServer(backend, { env: { STT_ENGINE: 'none' } });
    if (sphinx) offline = await startTestServer(backend, { env: { STT_ENGINE: 'auto' } });
  });
  after(async () => {
    await server?.close();
    await bare?.close();
    await offline?.close();
    await stt?.close();
  });

  test('completed: transcript, SOAP, source map with times, scores; PHI sealed at rest; audited', async () => {
    stt.script({
      status: 200,
      json: verboseJson([
        { start: 0, end: 4.2, text: ' Patient reports pain of four out of ten in the right knee.' },
        { start: 4.2, end: 7.9, text: ' Blood pressure 132 over 80.' },
        { start: 7.9, end: 13.5, text: ' Patient ambulated 150 feet with a rolling walker and contact guard assist.' },
        { start: 13.5, end: 17, text: ' Continue home exercise program three times a week.' },
      ]),
    });
    const { user, visit } = await clinicianWithVisit(server);
    const id = await submitted(server, user.token, { schedule_uuid: visit, discipline: 'pt', encounter_type: 'daily_note' }, spokenWav('Short test.', 'short'));
    const record = await eventually(
      async () => {
        const res = await statusOf(server, user.token, id);
        assert.equal(res.status, 200);
        assert.notEqual(res.body.data.status, 'processing');
        return res.body.data;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    assertCompleted(record);
    assert.equal(record.discipline, 'PT');
    assert.equal(record.schedule_uuid, visit);
    assert.equal(record.stt_engine, 'openai:whisper-1');
    assert.match(record.raw_transcript, /rolling walker/);
    const timed = Object.values(record.source_map).flat() as Array<{ start_ms?: number }>;
    assert.ok(timed.some((e) => typeof e.start_ms === 'number'), 'audio times carried over from the STT segments');
    assert.ok(record.audio_duration_ms > 0);

    const [row] = await server.db.database.db.select().from(aiTranscriptions).where(eq(aiTranscriptions.id, id));
    assert.ok(row);
    for (const v of [row.rawTranscriptEnc, row.generatedSoapEnc, row.sourceMapEnc]) {
      assert.ok(v?.startsWith('fc1.'));
      assert.doesNotMatch(v ?? '', /walker/);
    }
    const audited = await server.db.database.db.select({ action: auditLog.action, outcome: auditLog.outcome, details: auditLog.details }).from(auditLog).where(eq(auditLog.resourceId, id));
    assert.ok(audited.some((a) => a.action === 'create' && a.outcome === 'success'), 'the run was audited when created');
    assert.ok(audited.some((a) => a.action === 'read' && a.outcome === 'success'), 'status reads are audited');
    assert.doesNotMatch(JSON.stringify(audited), /walker/, 'no PHI in the audit trail');
    // Run twice (a crash after completing, before graphile recorded it): nothing is redone.
    const requestsBefore = stt.requests.length;
    const again = await server.runtime.services.aiPipeline.run(id, { attempts: 2, maxAttempts: 3 });
    assert.equal(again.outcome, 'skipped');
    assert.equal(stt.requests.length, requestsBefore, 'no second transcription');
    assert.deepEqual((await statusOf(server, user.token, id)).body.data, record, 'the completed record is unchanged');
    const req = stt.requests.at(-1);
    assert.equal(req?.authorization, 'Bearer sk-local');
    assert.equal(req?.file?.head.subarray(0, 4).toString(), 'RIFF', 'the normalised WAV was sent');
  });

  test('a spoken correction keeps the corrected value, supported by its span (not flagged unsupported)', async () => {
    stt.script({
      status: 200,
      json: verboseJson([{ start: 0, end: 6, text: ' Patient ambulated 150 feet, scratch that, it was 200 feet with a rolling walker and contact guard assist.' }]),
    });
    const { user, visit } = await clinicianWithVisit(server);
    const id = await submitted(server, user.token, { schedule_uuid: visit, discipline: 'PT', encounter_type: 'daily_note' }, spokenWav('Short test.', 'short'));
    const record = await eventually(
      async () => {
        const res = await statusOf(server, user.token, id);
        assert.equal(res.body.data.status, 'completed', JSON.stringify(res.body.data));
        return res.body.data;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    assertCompleted(record);
    assert.match(record.generated_soap.objective, /200 feet/);
    assert.doesNotMatch(record.generated_soap.objective, /150/);
    const entries = Object.values(record.source_map).flat() as Array<{ unsupported?: boolean }>;
    assert.ok(entries.length > 0 && entries.every((e) => !e.unsupported), JSON.stringify(record.source_map));
    assert.ok(!record.verification_flags.some((f: string) => /unsupported/i.test(f)), JSON.stringify(record.verification_flags));
  });

  test('end to end offline: an espeak-ng dictation transcribed by pocketsphinx and completed with valid spans', { skip: !sphinx && 'pocketsphinx not installed' }, async () => {
    const server = offline as TestServer;
    const { user, visit } = await clinicianWithVisit(server);
    const wav = spokenWav('Patient walked fifty feet with a walker. Pain is four out of ten. Continue the exercise program.', 'dictation');
    const id = await submitted(server, user.token, { schedule_uuid: visit, discipline: 'PT', encounter_type: 'daily_note' }, wav);
    const record = await eventually(
      async () => {
        const res = await statusOf(server, user.token, id);
        assert.notEqual(res.body.data.status, 'processing');
        return res.body.data;
      },
      { timeoutMs: 90_000, intervalMs: 200 },
    );
    // pocketsphinx on synthetic speech is imperfect: the structure is asserted, not the words.
    assertCompleted(record);
    assert.equal(record.stt_engine, 'pocketsphinx:en-us');
    assert.ok(record.raw_transcript.split(' ').length >= 5, record.raw_transcript);
    const entries = Object.values(record.source_map).flat() as Array<{ char_start: number; char_end: number; start_ms?: number; unsupported?: boolean }>;
    assert.ok(entries.length >= 1, 'some sentence was placed');
    assert.ok(entries.some((e) => typeof e.start_ms === 'number'), 'spans carry audio time from pocketsphinx');
  });

  test('an STT 500 is retried with backoff and then succeeds', async () => {
    stt.script({ status: 500, text: 'busy' }, { status: 200, json: verboseJson([{ start: 0, end: 3, text: DICTATION }]) });
    const { user, visit } = await clinicianWithVisit(server);
    const before = stt.requests.length;
    const id = await submitted(server, user.token, { schedule_uuid: visit, discipline: 'OT', encounter_type: 'daily_note' }, spokenWav('Short test.', 'short'));
    const record = await eventually(
      async () => {
        const res = await statusOf(server, user.token, id);
        assert.equal(res.body.data.status, 'completed', JSON.stringify(res.body.data));
        return res.body.data;
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
    assertCompleted(record);
    assert.equal(record.attempts, 2);
    assert.equal(stt.requests.length - before, 2);
  });

  test('a non-retryable STT failure fails at once with an actionable message; /ai/retry from failed only', async () => {
    stt.script({ status: 401, json: { error: 'no' } });
    const { user, visit } = await clinicianWithVisit(server);
    const id = await submitted(server, user.token, { schedule_uuid: visit, discipline: 'SLP', encounter_type: 'evaluation' }, spokenWav('Short test.', 'short'));
    const failed = await eventually(
      async () => {
        const res = await statusOf(server, user.token, id);
        assert.equal(res.body.data.status, 'failed');
        return res.body.data;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    assert.match(failed.error_message, /STT_API_KEY/);
    assert.equal(failed.attempts, 1);
    assert.equal(failed.generated_soap, null);

    stt.script({ status: 200, json: verboseJson([{ start: 0, end: 3, text: DICTATION }]) });
    const retried = await server.api('POST', `/ai/retry/${id}`, { token: user.token });
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    const again = await server.api('POST', `/ai/retry/${id}`, { token: user.token });
    // Processing (or already completed): either way not failed.
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'pipeline_not_failed');
    const done = await eventually(
      async () => {
        const res = await statusOf(server, user.token, id);
        assert.equal(res.body.data.status, 'completed');
        return res.body.data;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    assertCompleted(done);
    const completedRetry = await server.api('POST', `/ai/retry/${id}`, { token: user.token });
    assert.equal(completedRetry.status, 409);
    // Each finished run told the clinician, newest first: the failure, then the ready note.
    const notes = await server.api('GET', '/notifications', { token: user.token });
    assert.equal(notes.status, 200, JSON.stringify(notes.body));
    const ofRun = (notes.body.data as { type: string; data: Record<string, unknown> }[]).filter((n) => n.data.transcription_uuid === id);
    assert.deepEqual(ofRun.map((n) => n.type), ['note_ready', 'note_failed']);
    assert.ok(ofRun.every((n) => n.data.schedule_uuid === visit));
  });

  test('no STT engine configured: failed with how to configure one', async () => {
    const { user, visit } = await clinicianWithVisit(bare);
    const id = await submitted(bare, user.token, { schedule_uuid: visit, discipline: 'RN', encounter_type: 'daily_note' }, spokenWav('Short test.', 'short'));
    const failed = await eventually(
      async () => {
        const res = await statusOf(bare, user.token, id);
        assert.equal(res.body.data.status, 'failed');
        return res.body.data;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    assert.equal(failed.error_code, 'stt_not_configured');
    assert.match(failed.error_message, /STT_URL/);
    assert.match(failed.error_message, /pocketsphinx/);
  });

  test('404, 413 and 422 paths change nothing; tenant isolation of runs', async () => {
    const { user, visit } = await clinicianWithVisit(server);
    const other = await clinicianWithVisit(server);
    const wav = spokenWav('Short test.', 'short');
    const count = async () => (await server.db.database.db.select({ id: aiTranscriptions.id }).from(aiTranscriptions)).length;
    const before = await count();

    const missing = await processAudio(server, user.token, { schedule_uuid: visit, encounter_type: 'daily_note' }, wav);
    assert.equal(missing.status, 422);
    assert.ok(missing.body.errors.discipline, JSON.stringify(missing.body));
    const badType = await processAudio(server, user.token, { schedule_uuid: visit, discipline: 'PT', encounter_type: 'lunch' }, wav);
    assert.equal(badType.status, 422);
    assert.ok(badType.body.errors.encounter_type);
    const badDiscipline = await processAudio(server, user.token, { schedule_uuid: visit, discipline: 'astrology', encounter_type: 'daily_note' }, wav);
    assert.equal(badDiscipline.status, 422);
    assert.ok(badDiscipline.body.errors.discipline);
    const noUuid = await processAudio(server, user.token, { discipline: 'PT', encounter_type: 'daily_note' }, wav);
    assert.equal(noUuid.status, 422);
    assert.ok(noUuid.body.errors.schedule_uuid);
    const notAudio = await processAudio(server, user.token, { schedule_uuid: visit, discipline: 'PT', encounter_type: 'daily_note' }, Buffer.from('just some text, not audio at all'), 'visit.wav');
    assert.equal(notAudio.status, 422);
    assert.ok(notAudio.body.errors.audio);
    const noFile = await processAudio(server, user.token, { schedule_uuid: visit, discipline: 'PT', encounter_type: 'daily_note' }, null);
    assert.equal(noFile.status, 422);
    const foreign = await processAudio(server, user.token, { schedule_uuid: other.visit, discipline: 'PT', encounter_type: 'daily_note' }, wav);
    assert.equal(foreign.status, 404);
    const big = Buffer.concat([wav.subarray(0, 44), Buffer.alloc(3 * 1024 * 1024)]);
    const tooLarge = await processAudio(server, user.token, { schedule_uuid: visit, discipline: 'PT', encounter_type: 'daily_note' }, big);
    assert.equal(tooLarge.status, 413);
    assert.equal(await count(), before, 'nothing recorded');

    stt.script({ status: 200, json: verboseJson([{ start: 0, end: 3, text: DICTATION }]) });
    const id = await submitted(server, user.token, { schedule_uuid: visit, discipline: 'PT', encounter_type: 'daily_note' }, wav);
    assert.equal((await statusOf(server, other.user.token, id)).status, 404);
    assert.equal((await server.api('POST', `/ai/retry/${id}`, { token: other.user.token })).status, 404);
    assert.equal((await statusOf(server, user.token, crypto.randomUUID())).status, 404);
    assert.equal((await statusOf(server, user.token, 'not-a-uuid')).status, 404);
    assert.equal((await server.api('POST', `/ai/retry/${crypto.randomUUID()}`, { token: user.token })).status, 404);
    assert.equal((await statusOf(server, user.token, id)).status, 200);
  });

  test('the ai_status rows reach a connected sync device, processing then completed', async () => {
    stt.script({ status: 200, json: verboseJson([{ start: 0, end: 3, text: DICTATION }]), delayMs: 300 });
    const { user, visit } = await clinicianWithVisit(server);
    const { socket } = await helloSync(server, user.token, crypto.randomUUID());
    try {
      await nextFeed(socket);
      const id = await submitted(server, user.token, { schedule_uuid: visit, discipline: 'PT', encounter_type: 'daily_note' }, spokenWav('Short test.', 'short'));
      const seen: string[] = [];
      let last: any = null;
      await eventually(
        async () => {
          const feed = await nextFeed(socket, 30_000);
          for (const c of feed.changes) {
            if (c.table === 'ai_status' && c.id === id && c.op === 'upsert') {
              seen.push((c.row as { status: string }).status);
              last = c.row;
            }
          }
          assert.ok(seen.includes('completed'), `seen so far: ${seen.join(',')}`);
        },
        { timeoutMs: 60_000 },
      );
      assertCompleted(last);
      assert.equal(last.schedule_uuid, visit);
    } finally {
      socket.close();
    }
  });
});
