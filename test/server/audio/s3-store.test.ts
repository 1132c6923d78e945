/**
 * AUDIO_STORE=s3 against a local stand-in of the S3 protocol: a recording larger than one
 * part goes up as a multipart upload of ciphertext only (a canary in the audio is in no
 * object), nothing lands in the data dir, downloads and ranges read it back, an over-cap
 * upload leaves no object, and a deleted account's objects are deleted by the cleanup.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../../helpers/backends.ts';
import { startS3StandIn, type S3StandIn } from '../../helpers/s3-stand-in.ts';
import { startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { clinicianWithVisit, fileOf, filesUnder, speech, tempFile, upload } from './audio-fixtures.ts';

/** Short, so that the quiet-store test is quick; the stand-in answers in milliseconds. */
const S3_TIMEOUT_MS = 2000;

forEachBackend('audio: S3-compatible store', (backend) => {
  let server: TestServer;
  let s3: S3StandIn;
  before(async () => {
    s3 = await startS3StandIn();
    server = await startTestServer(backend, {
      env: {
        AUDIO_STORE: 's3',
        S3_ENDPOINT: s3.endpoint,
        S3_BUCKET: s3.bucket,
        S3_REGION: 'us-east-1',
        S3_ACCESS_KEY_ID: s3.accessKeyId,
        S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
        S3_FORCE_PATH_STYLE: 'true',
        VISIT_AUDIO_MAX_BYTES: String(12 * 1024 * 1024),
        S3_TIMEOUT_MS: String(S3_TIMEOUT_MS),
      },
    });
  });
  after(async () => {
    await server.close();
    await s3.close();
  });

  test('a 9 MB recording is stored as encrypted multipart parts, reads back whole and by range, and is deleted with the account', async () => {
    const { user, visit } = await clinicianWithVisit(server);
    const canary = Buffer.from('CANARY-S3-91ce-CANARY');
    const original = Buffer.concat([fs.readFileSync(speech('wav')), canary, Buffer.alloc(9 * 1024 * 1024).map((_, i) => (i * 31) % 256), canary]);
    const file = tempFile('s3.wav', original);
    const res = await upload(server, user.token, [fileOf(file), { name: 'schedule_uuid', value: visit }]);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.ok(s3.calls.includes('POST create-multipart') && s3.calls.filter((c) => c === 'PUT part').length >= 2 && s3.calls.includes('POST complete-multipart'), s3.calls.join(', '));
    const key = `${user.uuid}/${res.body.data.uuid}.fca`;
    const object = s3.objects.get(key);
    assert.ok(object, `object ${key} stored`);
    assert.ok(object.length > original.length, 'frames add their overhead');
    assert.equal(object.indexOf(canary), -1, 'only ciphertext leaves the server');
    assert.equal(filesUnder(path.join(server.dataDir, 'audio', 'objects')).length, 0, 'nothing in the data dir');

    const url = res.body.data.url.replace(server.config.appUrl, server.url);
    const whole = await fetch(url, { headers: { authorization: `Bearer ${user.token}` } });
    assert.ok(Buffer.from(await whole.arrayBuffer()).equals(original));
    const start = 5 * 1024 * 1024 + 17;
    const part = await fetch(url, { headers: { authorization: `Bearer ${user.token}`, range: `bytes=${start}-${start + 200_000}` } });
    assert.equal(part.status, 206);
    assert.ok(Buffer.from(await part.arrayBuffer()).equals(original.subarray(start, start + 200_001)));
    assert.ok(s3.calls.includes('GET range'), 'a range reads only the frames it needs');

    const del = await server.api('POST', '/delete-account', { token: user.token, body: { password: user.password } });
    assert.equal(del.status, 200);
    assert.ok((await server.runtime.services.audio.purgeDeleted()) >= 1);
    assert.equal(s3.objects.has(key), false);
  });

  test('a store gone quiet: the upload answers 503 after the SDK\'s tries of S3_TIMEOUT_MS each and records nothing; the same recording uploads once the store answers', async (t) => {
    const { user, visit } = await clinicianWithVisit(server);
    const file = tempFile('quiet.wav', fs.readFileSync(speech('wav')));
    const objects = s3.objects.size;
    s3.stall(true);
    let res;
    const started = performance.now();
    try {
      res = await upload(server, user.token, [fileOf(file), { name: 'schedule_uuid', value: visit }]);
    } finally {
      s3.stall(false);
    }
    const ms = performance.now() - started;
    assert.equal(res.status, 503, JSON.stringify(res.body));
    assert.equal(res.body.code, 'audio_store_unavailable');
    assert.equal(res.headers['retry-after'], '30', 'the app is told when to try again');
    // The SDK tries a request three times (its standard retries, with backoff), each attempt
    // ending after S3_TIMEOUT_MS of silence; the clean-up is not waited for.
    t.diagnostic(`answered after ${ms.toFixed(0)} ms`);
    assert.ok(ms >= S3_TIMEOUT_MS * 0.9 && ms < 3 * S3_TIMEOUT_MS + 5000, `answered after ${ms.toFixed(0)} ms`);
    assert.equal(s3.objects.size, objects);
    const again = await upload(server, user.token, [fileOf(file), { name: 'schedule_uuid', value: visit }]);
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(s3.objects.size, objects + 1);
  });

  test('a job asked to stop gives up its read of a quiet store at once, before any decrypted file is used', async (t) => {
    const { user, visit } = await clinicianWithVisit(server);
    const file = tempFile('stop.wav', fs.readFileSync(speech('wav')));
    const res = await upload(server, user.token, [fileOf(file), { name: 'schedule_uuid', value: visit }]);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    s3.stall(true);
    const stop = new AbortController();
    const STOP_AFTER_MS = 200;
    setTimeout(() => stop.abort(new Error('the worker is stopping')), STOP_AFTER_MS);
    let ran = false;
    const started = performance.now();
    try {
      await assert.rejects(
        server.runtime.services.audio.withPlainFile(res.body.data.uuid, async () => (ran = true), stop.signal),
      );
    } finally {
      s3.stall(false);
    }
    const ms = performance.now() - started;
    t.diagnostic(`gave up after ${ms.toFixed(0)} ms`);
    // Without the signal the read waits out the SDK's tries of S3_TIMEOUT_MS each (the test above).
    assert.ok(ms < S3_TIMEOUT_MS / 2, `gave up after ${ms.toFixed(0)} ms, not at once`);
    assert.equal(ran, false);
    // The store answering again, the same read works.
    const plain = await server.runtime.services.audio.withPlainFile(res.body.data.uuid, async (p) => fs.statSync(p).size);
    assert.equal(plain, fs.statSync(file).size);
  });

  test('over the cap: 413 and no object or open multipart upload is left', async () => {
    const { user, visit } = await clinicianWithVisit(server);
    const before = s3.objects.size;
    const head = fs.readFileSync(speech('wav'));
    const chunk = Buffer.alloc(512 * 1024, 5);
    const res = await upload(server, user.token, [
      { name: 'schedule_uuid', value: visit },
      {
        name: 'audio',
        filename: 'big.wav',
        contentType: 'audio/wav',
        body: async function* () {
          yield head;
          for (let i = 0; i < 40; i++) yield chunk;
        },
      },
    ]);
    assert.equal(res.status, 413, JSON.stringify(res.body));
    assert.equal(s3.objects.size, before);
    assert.equal(s3.openUploads(), 0);
  });
});
