/**
 * Speech to text: the OpenAI-compatible client against a local stand-in of the protocol
 * (request shape, auth header, timeouts, malformed output as a flagged failure), the
 * pocketsphinx output parser, the engine choice, and pocketsphinx itself on a few seconds of
 * espeak-ng speech (skipped where the Debian packages are missing).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '@fieldchart/server';
import { createSpeechToText, parsePocketsphinxOutput, pocketsphinxInstalled, SttError } from '../../../../server/src/services/ai/stt/index.ts';
import { createOpenAiStt, endpointOf } from '../../../../server/src/services/ai/stt/openai-stt.ts';
import { startSttStandIn, verboseJson, type SttStandIn } from './stt-stand-in.ts';
import { silentWav } from '../../../helpers/wav.ts';

let standIn: SttStandIn;
let dir: string;
let wav: string;

before(async () => {
  standIn = await startSttStandIn();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fc-stt-'));
  wav = path.join(dir, 'speech.wav');
  // A tiny valid RIFF/WAVE header with a little silence: the client does not look inside.
  fs.writeFileSync(wav, silentWav(3200));
});
after(async () => {
  await standIn.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const client = (over: Partial<{ apiKey: string | null; timeoutMs: number; url: string }> = {}) =>
  createOpenAiStt({ url: over.url ?? standIn.url, apiKey: over.apiKey === undefined ? 'sk-test-123' : over.apiKey, model: 'whisper-large-v3', timeoutMs: over.timeoutMs ?? 5000 });

async function rejectsWith(p: Promise<unknown>, code: string, retryable: boolean): Promise<SttError> {
  const err = await p.then(
    () => assert.fail('expected a failure'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof SttError, `an SttError, got ${String(err)}`);
  assert.equal(err.code, code);
  assert.equal(err.retryable, retryable);
  assert.ok(err.clinicianMessage.length > 20);
  return err;
}

describe('OpenAI-compatible transcription client', () => {
  test('sends the WAV as multipart with model, verbose_json, segment granularity and the Bearer key; maps timed segments', async () => {
    standIn.script({ status: 200, json: verboseJson([{ start: 0, end: 2.5, text: ' Patient reports pain four out of ten.' }, { start: 2.5, end: 5.25, text: ' Walked 150 feet with a rolling walker.' }]) });
    const before = standIn.requests.length;
    const t = await client().transcribe(wav);
    const req = standIn.requests[before];
    assert.ok(req);
    assert.equal(req.path, '/v1/audio/transcriptions');
    assert.equal(req.authorization, 'Bearer sk-test-123');
    assert.match(req.contentType ?? '', /^multipart\/form-data; boundary=/);
    assert.deepEqual(req.fields['model'], ['whisper-large-v3']);
    assert.deepEqual(req.fields['response_format'], ['verbose_json']);
    assert.deepEqual(req.fields['timestamp_granularities[]'], ['segment']);
    assert.ok(req.file);
    assert.equal(req.file.name, 'speech.wav');
    assert.equal(req.file.bytes, fs.statSync(wav).size);
    assert.equal(req.file.head.subarray(0, 4).toString(), 'RIFF');

    assert.equal(t.engine, 'openai:whisper-large-v3');
    assert.equal(t.text, 'Patient reports pain four out of ten. Walked 150 feet with a rolling walker.');
    assert.equal(t.segments.length, 2);
    assert.deepEqual(t.segments.map((s) => [s.start_ms, s.end_ms]), [[0, 2500], [2500, 5250]]);
    for (const s of t.segments) assert.equal(t.text.slice(s.char_start, s.char_end), s.text);
  });

  test('no key configured: no Authorization header (self-hosted servers)', async () => {
    standIn.script({ status: 200, json: verboseJson([{ start: 0, end: 1, text: 'Fine.' }]) });
    const before = standIn.requests.length;
    await client({ apiKey: null }).transcribe(wav);
    assert.equal(standIn.requests[before]?.authorization, undefined);
  });

  test('endpoint: a base URL, a /v1 URL or the full path all reach /v1/audio/transcriptions', () => {
    assert.equal(endpointOf('http://h:1'), 'http://h:1/v1/audio/transcriptions');
    assert.equal(endpointOf('http://h:1/v1/'), 'http://h:1/v1/audio/transcriptions');
    assert.equal(endpointOf('http://h:1/proxy/v1/audio/transcriptions'), 'http://h:1/proxy/v1/audio/transcriptions');
  });

  test('a slow service times out as a retryable failure', async () => {
    standIn.script({ status: 200, json: verboseJson([]), delayMs: 1500 });
    const t0 = Date.now();
    await rejectsWith(client({ timeoutMs: 200 }).transcribe(wav), 'stt_timeout', true);
    assert.ok(Date.now() - t0 < 1400, 'gave up at the timeout, not when the answer came');
  });

  test('5xx and 429 are retryable; 401 is not and names STT_API_KEY; 400 is not', async () => {
    standIn.script({ status: 500, text: 'internal: traceback with patient words' });
    const e = await rejectsWith(client().transcribe(wav), 'stt_unavailable', true);
    assert.doesNotMatch(e.message + e.clinicianMessage, /traceback|patient words/, 'provider text never copied');
    standIn.script({ status: 429, json: { error: { message: 'rate limited' } } });
    await rejectsWith(client().transcribe(wav), 'stt_unavailable', true);
    standIn.script({ status: 401, json: { error: { message: 'bad key' } } });
    const auth = await rejectsWith(client().transcribe(wav), 'stt_auth', false);
    assert.match(auth.clinicianMessage, /STT_API_KEY/);
    standIn.script({ status: 400, json: { error: { message: 'bad file' } } });
    await rejectsWith(client().transcribe(wav), 'stt_rejected', false);
  });

  test('malformed output is a flagged failure, not a crash', async () => {
    standIn.script({ status: 200, text: '<html>not json</html>' });
    await rejectsWith(client().transcribe(wav), 'stt_malformed', false);
    standIn.script({ status: 200, json: { transcript: 'wrong field' } });
    await rejectsWith(client().transcribe(wav), 'stt_malformed', false);
    standIn.script({ status: 200, json: { text: 'x', segments: [{ start: 3, end: 1, text: 'x' }] } });
    await rejectsWith(client().transcribe(wav), 'stt_malformed', false);
  });

  test('a service that is not listening is retryable', async () => {
    await rejectsWith(client({ url: 'http://127.0.0.1:1' }).transcribe(wav), 'stt_unreachable', true);
  });
});

describe('engine choice', () => {
  const cfg = (env: Record<string, string>) => loadConfig({ NODE_ENV: 'test', ...env }).ai.stt;
  test('auto prefers STT_URL, none is none, openai without STT_URL is none', () => {
    assert.equal(createSpeechToText(cfg({ STT_URL: 'http://127.0.0.1:9', STT_MODEL: 'm1' }))?.name, 'openai:m1');
    assert.equal(createSpeechToText(cfg({ STT_ENGINE: 'none', STT_URL: 'http://127.0.0.1:9' })), null);
    assert.equal(createSpeechToText(cfg({ STT_ENGINE: 'openai' })), null);
    assert.equal(createSpeechToText(cfg({ STT_ENGINE: 'pocketsphinx', POCKETSPHINX_BIN: '/nonexistent/pocketsphinx' })), null);
    assert.throws(() => loadConfig({ STT_ENGINE: 'whisper' }), /STT_ENGINE/);
  });
});

describe('pocketsphinx', () => {
  test('parses -time yes output into timed utterances (fillers, silences and alternates dropped)', () => {
    const out = [
      'walked twenty feet',
      '<s> 0.000 0.670 0.999400',
      'walked 0.680 0.910 0.196953',
      '<sil> 0.920 1.330 0.999800',
      'twenty(2) 1.340 1.620 0.919606',
      '[NOISE] 1.630 1.700 0.5',
      'feet 1.710 2.000 0.91',
      '</s> 2.000 2.300 1.000000',
      'pain four',
      '<s> 3.000 3.100 1.0',
      'pain 3.100 3.400 0.8',
      'four 3.400 3.900 0.7',
      '</s> 3.900 4.000 1.0',
    ].join('\n');
    assert.deepEqual(parsePocketsphinxOutput(out), [
      { start_ms: 680, end_ms: 2000, text: 'walked twenty feet' },
      { start_ms: 3100, end_ms: 3900, text: 'pain four' },
    ]);
  });

  const installed = pocketsphinxInstalled({ bin: 'pocketsphinx_continuous', modelDir: '/usr/share/pocketsphinx/model/en-us' });
  test('transcribes a few seconds of espeak-ng speech offline, with timed segments indexing the text', { skip: !installed && 'pocketsphinx not installed' }, async () => {
    const raw = path.join(dir, 'espeak.wav');
    const pcm = path.join(dir, 'espeak-16k.wav');
    execFileSync('espeak-ng', ['-w', raw, 'The patient walked fifty feet with a rolling walker.']);
    execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-i', raw, '-ar', '16000', '-ac', '1', '-c:a', 'pcm_s16le', pcm]);
    const stt = createSpeechToText(loadConfig({ NODE_ENV: 'test', STT_ENGINE: 'pocketsphinx' }).ai.stt);
    assert.ok(stt);
    const t = await stt.transcribe(pcm);
    assert.equal(t.engine, 'pocketsphinx:en-us');
    assert.ok(t.text.split(' ').length >= 3, `some words recognised: ${t.text}`);
    assert.ok(t.segments.length >= 1);
    for (const s of t.segments) {
      assert.equal(t.text.slice(s.char_start, s.char_end), s.text);
      assert.ok(s.end_ms > s.start_ms && s.end_ms <= 6000);
    }
  });

  test('a missing binary is a non-retryable failure that says how to fix it', async () => {
    const { createPocketsphinxStt } = await import('../../../../server/src/services/ai/stt/pocketsphinx.ts');
    const stt = createPocketsphinxStt({ bin: '/nonexistent/pocketsphinx_continuous', modelDir: '/usr/share/pocketsphinx/model/en-us', timeoutMs: 5000 });
    await rejectsWith(stt.transcribe(wav), 'stt_not_installed', false);
  });
});
