/**
 * Dictations on the device, against the real server and its AI pipeline (speech to text is the
 * local stand-in): a recording made offline is kept sealed (its canary bytes are in no stored
 * byte of the data dir), survives a restart, is uploaded by tus once the server is reachable,
 * handed to process-audio, and its note suggestion arrives through the sync feed; then its
 * audio leaves the device. An upload cut mid-way resumes at the server's offset and the server
 * ends with one byte-identical recording and one run. A recording the server refuses is
 * `rejected`, kept, and reported in the sync status. Sign-out counts unsent dictations.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { OutboxNotEmptyError } from '../../client-lib/src/index.ts';
import { openLocalDb } from '../../client-lib/src/storage/local-db.ts';
import { forEachBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { startPatchCuttingProxy } from '../helpers/patch-cutting-proxy.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { silentWav } from '../helpers/wav.ts';
import { startSttStandIn, verboseJson, type SttStandIn } from '../server/ai/pipeline/stt-stand-in.ts';
import { createPatient, scheduleVisit, utcClinician } from '../server/visits/visit-fixtures.ts';
import { findBytes } from './device-bytes.ts';
import { openClient, tempDataDir } from './support.ts';

const WAIT = { timeoutMs: 90_000, intervalMs: 50 };
const today = () => new Date().toISOString().slice(0, 10);
type Row = Record<string, unknown>;
const rowsOf = (r: unknown): Row[] => (Array.isArray(r) ? (r as Row[]) : ((r as { rows?: Row[] }).rows ?? []));

/** A valid WAV of `dataBytes` with `canary` written into its samples at a few places. */
function recordingWith(canary: Buffer, dataBytes: number): Buffer {
  const wav = silentWav(dataBytes);
  for (const at of [1000, Math.floor(dataBytes / 2), dataBytes - 200]) canary.copy(wav, at);
  return wav;
}

// Each test ends within 3 minutes or fails: in one CI run a PostgreSQL case hung until the
// file's 600 s bound after the database gate answered 503 beside another suite (not yet
// understood); a bound per test makes that a failure to read, not ten silent minutes.
const BOUND = { timeout: 180_000 };

forEachBackend('dictations on the device', (backend) => {
  let server: TestServer;
  let stt: SttStandIn;
  before(async () => {
    stt = await startSttStandIn();
    stt.script({ status: 200, json: verboseJson([{ start: 0, end: 3, text: 'Patient reports knee pain three out of ten.' }, { start: 3, end: 6, text: 'Plan: continue home exercises twice daily.' }]) });
    server = await startTestServer(backend, { env: { STT_URL: stt.url, STT_API_KEY: 'sk-local' } });
  });
  after(async () => {
    await server?.close();
    await stt?.close();
  });

  const db = () => server.runtime.services.unitOfWork.db;
  const visitWithUser = async () => {
    const user = await utcClinician(server);
    const patient = await createPatient(server, user, { referral: { discipline: 'PT' } });
    const visit = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today(), start_time: '09:00' });
    return { user, visit };
  };
  const serverAudio = async (visit: string, token: string) => {
    const files = rowsOf(await db().execute(sql`select id from audio_files where visit_id = ${visit}`));
    const runs = rowsOf(await db().execute(sql`select id from ai_transcriptions where visit_id = ${visit}`));
    const bytes = await Promise.all(
      files.map(async (f) => Buffer.from(await (await fetch(`${server.url}/api/therapist/v1/audio/${String(f.id)}`, { headers: { authorization: `Bearer ${token}` } })).arrayBuffer())),
    );
    return { files: bytes, runs: runs.length };
  };

  test('recorded offline, kept sealed across a restart, uploaded when online; the suggestion arrives and the audio leaves the device', BOUND, async (t) => {
    // Where it stood, in the report: this test once ran into its bound on PostgreSQL in CI.
    const started = Date.now();
    const step = (label: string) => t.diagnostic(`${Date.now() - started} ms: ${label}`);
    const { user, visit } = await visitWithUser();
    step('visit scheduled');
    const canary = Buffer.from(`CANARY-DICTATION-${randomUUID()}`);
    const audio = recordingWith(canary, 700_000);
    const proxy = await startTcpProxy(server.url);
    const dir = tempDataDir();
    let client = await openClient(proxy.url, dir);
    let open = true;
    try {
      step('device open');
      await client.signIn({ email: user.email, password: user.password });
      step('signed in');
      await client.sync.whenSynced(WAIT);
      step('synced');
      assert.ok(await client.visits.get(visit), 'the visit is on the device');

      proxy.cut();
      await eventually(() => assert.equal(client.sync.status.connected, false), WAIT);
      const d = await client.dictations.add(visit, new Uint8Array(audio));
      step('recorded offline');
      assert.equal(d.discipline, 'PT', "the visit's referral discipline");
      assert.equal(d.bytes, audio.length);
      // Offline the upload fails and waits; the dictation is still only here.
      await eventually(async () => assert.ok((await client.dictations.get(d.id))?.lastError, 'the refused dictation carries its error'), WAIT);
      assert.equal((await client.dictations.get(d.id))?.transcriptionUuid, null);
      await client.close();
      open = false;
      step('closed');

      assert.deepEqual(findBytes(dir, canary), [], 'the recording is in no stored byte of the data dir in clear');

      // Restarted, still offline: the dictation is there, waiting.
      client = await openClient(proxy.url, dir);
      open = true;
      step('reopened');
      const kept = await client.dictations.list(visit);
      assert.deepEqual(kept.map((k) => [k.id, k.bytes]), [[d.id, audio.length]]);
      assert.ok(['on_device', 'uploading'].includes(kept[0]!.state));
      assert.equal((await serverAudio(visit, user.token)).runs, 0, 'nothing reached the server while offline');

      proxy.restore();
      step('online');
      const done = await eventually(async () => {
        const got = await client.dictations.get(d.id);
        assert.equal(got?.state, 'on_server');
        assert.equal(got?.suggestion?.status, 'completed');
        return got!;
      }, WAIT);
      step('on the server, suggestion arrived');
      assert.match(done.suggestion?.generated_soap?.subjective ?? '', /knee pain/i, 'the note suggestion came through the sync feed');
      assert.equal(done.suggestion?.transcription_uuid ?? done.suggestion?.uuid, done.transcriptionUuid);
      const onServer = await serverAudio(visit, user.token);
      assert.equal(onServer.runs, 1, 'one run');
      assert.equal(onServer.files.length, 1, 'one recording');
      assert.ok(onServer.files[0]!.equals(audio), 'the server holds the recording byte for byte');
      await client.close();
      open = false;

      const local = await openLocalDb(dir);
      try {
        assert.deepEqual(await local.query('select dictation_id from dictation_chunks'), [], 'the audio left the device once the run was acknowledged');
      } finally {
        await local.close();
      }
    } finally {
      if (open) await client.close();
      await proxy.close();
    }
  });

  test('an upload cut mid-way resumes at the server\u2019s offset; one byte-identical recording and one run on the server', BOUND, async () => {
    const { user, visit } = await visitWithUser();
    const audio = recordingWith(Buffer.from(`CANARY-CUT-${randomUUID()}`), 1_500_000);
    const proxy = await startPatchCuttingProxy(server.url);
    const client = await openClient(proxy.url);
    try {
      await client.signIn({ email: user.email, password: user.password });
      await client.sync.whenSynced(WAIT);
      proxy.arm(600_000);
      const d = await client.dictations.add(visit, new Uint8Array(audio));
      await eventually(async () => assert.equal((await client.dictations.get(d.id))?.state, 'on_server'), WAIT);

      assert.ok(proxy.cutAfter !== null && proxy.cutAfter >= 600_000, 'the first PATCH was cut');
      const uploads = proxy.requests.filter((r) => r.path.includes('/uploads'));
      assert.equal(uploads.filter((r) => r.method === 'POST').length, 1, 'one upload was created: the device resumed it, never started over');
      const patches = uploads.filter((r) => r.method === 'PATCH').map((r) => r.uploadOffset ?? -1);
      assert.equal(patches[0], 0);
      assert.ok(uploads.some((r) => r.method === 'HEAD'), 'the device asked the server where to resume');
      const resumedAt = patches[1]!;
      assert.ok(resumedAt > 0 && resumedAt <= proxy.cutAfter!, `the resumed PATCH starts at the server's offset (${patches.join(', ')})`);
      assert.equal(patches.filter((o) => o === 0).length, 1, 'no PATCH started over from 0');

      const onServer = await serverAudio(visit, user.token);
      assert.equal(onServer.runs, 1, 'exactly one run');
      assert.equal(onServer.files.length, 1, 'exactly one recording');
      assert.ok(onServer.files[0]!.equals(audio), 'byte-identical');
    } finally {
      await client.close();
      await proxy.close();
    }
  });

  test('closing the client while an upload hangs returns at once; the recording stays and goes on at the next open', BOUND, async () => {
    const { user, visit } = await visitWithUser();
    // Everything but a PATCH goes through; a PATCH is taken and never answered.
    const stalling = await startTcpProxy(server.url);
    stalling.stall((chunk) => chunk.subarray(0, 6).toString('latin1') === 'PATCH ');
    const dir = tempDataDir();
    let client = await openClient(stalling.url, dir);
    try {
      await client.signIn({ email: user.email, password: user.password });
      await client.sync.whenSynced(WAIT);
      const d = await client.dictations.add(visit, new Uint8Array(recordingWith(Buffer.from('CANARY-STALL'), 300_000)));
      await eventually(() => assert.ok(stalling.stalled > 0, 'no PATCH reached the stalling network yet'), WAIT);
      const closed = await Promise.race([client.close().then(() => 'closed'), new Promise((r) => setTimeout(r, 15_000, 'still closing after 15 s'))]);
      assert.equal(closed, 'closed');

      // The network is back (the stored upload URL names this address).
      stalling.stall(null);
      client = await openClient(stalling.url, dir);
      await client.signIn({ email: user.email, password: user.password });
      await eventually(async () => assert.equal((await client.dictations.get(d.id))?.state, 'on_server'), WAIT);
    } finally {
      await client.close();
      await stalling.close();
    }
  });

  test('a recording the server refuses is rejected, kept and reported; sign-out counts it, and a forced sign-out wipes it', BOUND, async () => {
    const { user, visit } = await visitWithUser();
    const client = await openClient(server.url);
    try {
      await client.signIn({ email: user.email, password: user.password });
      await client.sync.whenSynced(WAIT);
      // Not audio: tus takes any bytes, process-audio decides the type from them (422).
      const d = await client.dictations.add(visit, new TextEncoder().encode('this is not a recording '.repeat(200)));
      const rejected = await eventually(async () => {
        const got = await client.dictations.get(d.id);
        assert.equal(got?.state, 'rejected');
        return got!;
      }, WAIT);
      assert.ok(rejected.lastError?.code, 'the refusal is kept');
      assert.equal(client.sync.status.lastError?.code, 'dictation_rejected');
      assert.equal((await serverAudio(visit, user.token)).runs, 0);

      await assert.rejects(client.signOut(), OutboxNotEmptyError, 'the recording exists only here');
      await client.signOut({ force: true });
      assert.deepEqual(await client.dictations.list(), []);
    } finally {
      await client.close();
    }
  });
});
