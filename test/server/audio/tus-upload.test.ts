/**
 * The tus endpoint on a real server: create, an interrupted PATCH resumed from the offset HEAD
 * reports, per-user ownership of upload ids, the size cap, partial bytes encrypted at rest,
 * the finished upload handed to services.audio.fromUpload, expiry; and key rotation re-wrapping
 * every audio data key (old key removed from the ring: audio still reads).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { forEachBackend } from '../../helpers/backends.ts';
import { eventually } from '../../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { clinicianWithVisit, fileOf, filesUnder, postMultipart, speech, tempFile, upload } from './audio-fixtures.ts';

type Row = Record<string, unknown>;
const rowsOf = (r: unknown): Row[] => (Array.isArray(r) ? (r as Row[]) : ((r as { rows?: Row[] }).rows ?? []));
const TUS = { 'tus-resumable': '1.0.0' };
const CTX = { actorUserId: null, organizationId: null, requestId: null };

forEachBackend('audio: tus resumable uploads and key rotation', (backend) => {
  let server: TestServer;
  before(async () => {
    // No speech engine: a run started here fails at once instead of transcribing beside the tests.
    server = await startTestServer(backend, { env: { AI_AUDIO_MAX_BYTES: String(4 * 1024 * 1024), STT_ENGINE: 'none' } });
  });
  after(() => server.close());

  const base = () => `${server.url}/api/therapist/v1/uploads`;
  const tus = (method: string, url: string, token: string | null, headers: Record<string, string> = {}, body?: Buffer) =>
    fetch(url, { method, headers: { ...TUS, ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers }, ...(body ? { body: new Uint8Array(body) } : {}) });
  const create = async (token: string, length: number) => {
    const res = await tus('POST', base(), token, { 'upload-length': String(length), 'upload-metadata': `filename ${Buffer.from('Okafor visit.wav').toString('base64')}` });
    assert.equal(res.status, 201, await res.text());
    const location = res.headers.get('location') ?? '';
    assert.match(location, /^\/api\/therapist\/v1\/uploads\/[a-f0-9]{32}$/);
    return { url: server.url + location, id: location.split('/').pop() ?? '' };
  };
  const patch = (token: string, url: string, offset: number, body: Buffer) =>
    tus('PATCH', url, token, { 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream' }, body);
  const offsetOf = async (token: string, url: string) => {
    const res = await tus('HEAD', url, token);
    assert.equal(res.status, 200);
    return Number(res.headers.get('upload-offset'));
  };

  /** Sends `body` as a PATCH but drops the connection after `cut` bytes (a phone losing signal). */
  const interruptedPatch = (token: string, url: string, offset: number, body: Buffer, cut: number) =>
    new Promise<void>((resolve) => {
      const req = http.request(url, {
        method: 'PATCH',
        headers: { ...TUS, authorization: `Bearer ${token}`, 'upload-offset': String(offset), 'content-type': 'application/offset+octet-stream', 'content-length': String(body.length) },
      });
      req.on('error', () => resolve());
      req.on('response', (res) => {
        res.resume();
        resolve();
      });
      req.write(body.subarray(0, cut), () => {
        // Let the server take the bytes in before the line drops.
        setTimeout(() => {
          req.destroy();
          resolve();
        }, 200);
      });
    });

  test('an interrupted upload resumes from the offset HEAD reports and is handed to fromUpload intact', async () => {
    const { user, visit } = await clinicianWithVisit(server);
    const canary = Buffer.from('CANARY-TUS-4b1d-CANARY');
    const original = Buffer.concat([fs.readFileSync(speech('wav')), canary, Buffer.alloc(400_000, 0).map((_, i) => i % 253), canary]);
    const { url, id } = await create(user.token, original.length);
    assert.equal(await offsetOf(user.token, url), 0);

    const first = await patch(user.token, url, 0, original.subarray(0, 100_000));
    assert.equal(first.status, 204);
    assert.equal(Number(first.headers.get('upload-offset')), 100_000);

    await interruptedPatch(user.token, url, 100_000, original.subarray(100_000), 150_000);
    // What the server committed of the cut request: at least nothing, at most what was sent.
    const resumeAt = await eventually(async () => {
      const o = await offsetOf(user.token, url);
      assert.ok(o >= 100_000 && o <= 250_000, String(o));
      return o;
    });
    assert.ok(resumeAt > 100_000, `the bytes that arrived before the cut were kept (offset ${resumeAt})`);
    const rest = await patch(user.token, url, resumeAt, original.subarray(resumeAt));
    assert.equal(rest.status, 204, await rest.text());
    assert.equal(Number(rest.headers.get('upload-offset')), original.length);

    // Partial and finished upload bytes are frames of ciphertext: the canary is nowhere on disk.
    for (const f of filesUnder(server.dataDir)) assert.equal(fs.readFileSync(f).indexOf(canary), -1, f);

    const audio = server.runtime.services.audio;
    const stored = await audio.fromUpload(CTX, { userId: user.uuid, uploadId: id, visitId: visit, purpose: 'ai' });
    assert.deepEqual([stored.bytes, stored.format], [original.length, 'wav']);
    const got = await fetch(`${server.url}/api/therapist/v1/audio/${stored.uuid}`, { headers: { authorization: `Bearer ${user.token}` } });
    assert.ok(Buffer.from(await got.arrayBuffer()).equals(original));
    assert.equal((await tus('HEAD', url, user.token)).status, 404, 'the upload is gone once handed over');
    assert.equal(fs.existsSync(path.join(server.dataDir, 'audio', 'uploads', id)), false);
  });

  test('a finished upload handed to POST /ai/process-audio as upload_id becomes the run\'s recording, in its transaction', async () => {
    const { user, visit } = await clinicianWithVisit(server);
    const other = await clinicianWithVisit(server);
    const wav = fs.readFileSync(speech('wav'));
    const { url, id } = await create(user.token, wav.length);
    assert.equal((await patch(user.token, url, 0, wav)).status, 204);
    const fields = (token: string, schedule: string, uploadId: string) => [
      { name: 'upload_id', value: uploadId },
      { name: 'schedule_uuid', value: schedule },
      { name: 'discipline', value: 'PT' },
      { name: 'encounter_type', value: 'daily_note' },
    ];
    const processAudio = (token: string, parts: ReturnType<typeof fields>) => postMultipart(`${server.url}/api/therapist/v1/ai/process-audio`, token, parts);
    // Another clinician cannot hand over this upload, even to their own visit.
    const foreign = await processAudio(other.user.token, fields(other.user.token, other.visit, id));
    assert.equal(foreign.status, 404, JSON.stringify(foreign.body));
    const res = await processAudio(user.token, fields(user.token, visit, id));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(typeof res.body.data.transcription_uuid, 'string');
    const db = server.runtime.services.unitOfWork.db;
    const rows = rowsOf(await db.execute(sql`select bytes, format, purpose from audio_files where visit_id = ${visit}`));
    assert.deepEqual(rows.map((r) => [Number(r.bytes), r.format, r.purpose]), [[wav.length, 'wav', 'ai']]);
    assert.equal((await tus('HEAD', url, user.token)).status, 404, 'the upload is consumed');
    const again = await processAudio(user.token, fields(user.token, visit, id));
    assert.equal(again.status, 404, 'an upload is handed over once');
  });

  test("upload ids are per user; no token is 401; over the cap is 413; unfinished or foreign ids are refused by fromUpload", async () => {
    const { user, visit } = await clinicianWithVisit(server);
    const other = await clinicianWithVisit(server);
    const { url, id } = await create(user.token, 5000);
    assert.equal((await patch(user.token, url, 0, Buffer.from(fs.readFileSync(speech('wav')).subarray(0, 1000)))).status, 204);
    assert.equal((await tus('HEAD', url, other.user.token)).status, 404);
    assert.equal((await patch(other.user.token, url, 1000, Buffer.alloc(10))).status, 404);
    assert.equal((await tus('DELETE', url, other.user.token)).status, 404);
    assert.equal((await tus('HEAD', url, null)).status, 401);
    assert.equal((await tus('POST', base(), null, { 'upload-length': '10' })).status, 401);
    assert.equal(await offsetOf(user.token, url), 1000, 'nothing the others sent landed');
    const big = await tus('POST', base(), user.token, { 'upload-length': String(server.config.audio.aiAudioMaxBytes + 1) });
    assert.equal(big.status, 413);

    const audio = server.runtime.services.audio;
    await assert.rejects(audio.fromUpload(CTX, { userId: user.uuid, uploadId: id, visitId: visit, purpose: 'ai' }), (e: Error & { statusCode?: number }) => e.statusCode === 422);
    await assert.rejects(audio.fromUpload(CTX, { userId: other.user.uuid, uploadId: id, visitId: other.visit, purpose: 'ai' }), (e: Error & { statusCode?: number }) => e.statusCode === 404);
    assert.equal((await tus('DELETE', url, user.token)).status, 204);
    assert.equal((await tus('HEAD', url, user.token)).status, 404);
  });

  test('a finished upload that is not audio is 422 from fromUpload, and nothing is stored', async () => {
    const { user, visit } = await clinicianWithVisit(server);
    const text = Buffer.from('not audio at all, just text\n'.repeat(50));
    const { url, id } = await create(user.token, text.length);
    assert.equal((await patch(user.token, url, 0, text)).status, 204);
    const db = server.runtime.services.unitOfWork.db;
    const count = async () => Number(rowsOf(await db.execute(sql`select count(*)::int as n from audio_files where visit_id = ${visit}`))[0]?.n);
    await assert.rejects(
      server.runtime.services.audio.fromUpload(CTX, { userId: user.uuid, uploadId: id, visitId: visit, purpose: 'ai' }),
      (e: Error & { statusCode?: number; errors?: Record<string, string[]> }) => e.statusCode === 422 && Boolean(e.errors?.audio),
    );
    assert.equal(await count(), 0);
  });

  test('expired uploads are deleted with their encrypted bytes', async () => {
    const { user } = await clinicianWithVisit(server);
    const { url, id } = await create(user.token, 10_000);
    assert.equal((await patch(user.token, url, 0, Buffer.alloc(2000, 1))).status, 204);
    const db = server.runtime.services.unitOfWork.db;
    await db.execute(sql`update audio_uploads set expires_at = now() - interval '1 minute' where id = ${id}`);
    assert.ok((await server.runtime.services.audio.uploads.deleteExpired()) >= 1);
    assert.equal((await tus('HEAD', url, user.token)).status, 404);
    assert.equal(fs.existsSync(path.join(server.dataDir, 'audio', 'uploads', id)), false);
  });

  test('key rotation re-wraps every audio data key; with the old key gone from the ring, audio still downloads', async () => {
    const { user, visit } = await clinicianWithVisit(server);
    const file = tempFile('rotate.wav', Buffer.concat([fs.readFileSync(speech('wav')), Buffer.alloc(100_000, 9)]));
    const res = await upload(server, user.token, [fileOf(file), { name: 'schedule_uuid', value: visit }]);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const pending = await create(user.token, 10);
    const { services } = server.runtime;
    const oldKey = services.phi.ring().currentKeyId;
    const rotated = await services.phiKeys.rotate();
    assert.ok(rotated.rotated);
    const db = services.unitOfWork.db;
    const keys = rowsOf(
      await db.execute(sql`select data_key_enc as k from audio_files union all select data_key_enc as k from audio_uploads`),
    ).map((r) => String(r.k));
    assert.ok(keys.length >= 2);
    for (const k of keys) assert.ok(k.startsWith(`fc1.${rotated.key_id}.`), 'wrapped under the new key');
    // Drop the old key from this process's ring: the audio must not need it any more.
    const file0 = JSON.parse(fs.readFileSync(path.join(server.dataDir, 'keys', 'phi-keys.json'), 'utf8'));
    services.phi.install({ ...file0, keys: file0.keys.filter((k: { id: string }) => k.id !== oldKey) });
    const got = await fetch(res.body.data.url.replace(server.config.appUrl, server.url), { headers: { authorization: `Bearer ${user.token}` } });
    assert.equal(got.status, 200);
    assert.ok(Buffer.from(await got.arrayBuffer()).equals(fs.readFileSync(file)));
    assert.equal((await patch(user.token, pending.url, 0, Buffer.alloc(10, 1))).status, 204, 'an upload in progress continues');
    services.phi.install(file0);
  });
});
