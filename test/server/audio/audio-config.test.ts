/** The audio settings: the spec's caps by default, the S3 store's required and paired variables. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '@fieldchart/server';

test("defaults: the spec's 50 MB and 100 MB caps, a one-hour duration cap, the data dir store", () => {
  const c = loadConfig({});
  assert.equal(c.audio.visitAudioMaxBytes, 50 * 1024 * 1024);
  assert.equal(c.audio.aiAudioMaxBytes, 100 * 1024 * 1024);
  assert.equal(c.audio.maxDurationSeconds, 3600);
  assert.equal(c.audio.uploadExpiryHours, 24);
  assert.deepEqual(c.audio.store, { kind: 'local' });
});

test('AUDIO_STORE=s3 needs S3_BUCKET; the key id and secret go together; a bad endpoint is named', () => {
  assert.throws(() => loadConfig({ AUDIO_STORE: 's3' }), (e: Error) => e instanceof ConfigError && /S3_BUCKET/.test(e.message));
  assert.throws(() => loadConfig({ AUDIO_STORE: 's3', S3_BUCKET: 'b', S3_ACCESS_KEY_ID: 'k' }), (e: Error) => e instanceof ConfigError && /S3_SECRET_ACCESS_KEY/.test(e.message));
  assert.throws(() => loadConfig({ AUDIO_STORE: 's3', S3_BUCKET: 'b', S3_ENDPOINT: 'not a url' }), (e: Error) => e instanceof ConfigError && /S3_ENDPOINT/.test(e.message));
  assert.throws(() => loadConfig({ AUDIO_STORE: 'ftp' }), (e: Error) => e instanceof ConfigError && /AUDIO_STORE/.test(e.message));
  const c = loadConfig({ AUDIO_STORE: 's3', S3_BUCKET: 'b', S3_ENDPOINT: 'http://127.0.0.1:9000', S3_FORCE_PATH_STYLE: 'true' });
  assert.deepEqual(c.audio.store, { kind: 's3', endpoint: 'http://127.0.0.1:9000', bucket: 'b', region: 'us-east-1', accessKeyId: null, secretAccessKey: null, forcePathStyle: true, timeoutMs: 30_000 });
});
