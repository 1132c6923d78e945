/**
 * ffprobe/ffmpeg as the pipeline runs them, on real files: durations of wav/mp3/m4a, the 16 kHz
 * mono PCM output, an over-long file refused before decoding, garbage and truncated files,
 * the kill timeout, the frame encryption's tamper detection, and the byte sniffer.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { test } from 'node:test';
import { AudioProcessingError, normaliseToPcm16kMono, probeDurationMs } from '../../../server/src/services/audio/ffmpeg.ts';
import { FRAME_SIZE, FrameDecryptor, FrameEncryptor, newDataKey } from '../../../server/src/services/audio/frames.ts';
import { sniffAudio } from '../../../server/src/services/audio/sniff.ts';
import { speech, tempFile, tone } from './audio-fixtures.ts';

const out = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-ffmpeg-test-'));
process.on('exit', () => fs.rmSync(out, { recursive: true, force: true }));

const streamInfo = (file: string) =>
  execFileSync('ffprobe', ['-v', 'error', '-show_entries', 'stream=sample_rate,channels,codec_name', '-of', 'json', file], { encoding: 'utf8' });

test('probe and normalise wav, mp3 and m4a to 16 kHz mono 16-bit PCM', async () => {
  for (const format of ['wav', 'mp3', 'm4a'] as const) {
    const file = speech(format);
    const ms = await probeDurationMs(file, { format });
    assert.ok(ms > 2000 && ms < 15_000, `${format}: ${ms} ms`);
    const target = path.join(out, `norm-${format}.wav`);
    const r = await normaliseToPcm16kMono(file, target, { format, maxDurationMs: 60_000, timeoutMs: 60_000 });
    assert.equal(r.durationMs, ms);
    const info = JSON.parse(streamInfo(target)).streams[0];
    assert.deepEqual([info.codec_name, info.sample_rate, info.channels], ['pcm_s16le', '16000', 1], format);
  }
});

test('an over-long recording is refused by ffprobe before anything is decoded', async () => {
  const long = tone(12);
  const target = path.join(out, 'long.wav');
  await assert.rejects(
    normaliseToPcm16kMono(long, target, { format: 'wav', maxDurationMs: 5000, timeoutMs: 30_000 }),
    (e: unknown) => e instanceof AudioProcessingError && e.reason === 'too_long' && /minutes/.test(e.message),
  );
  assert.equal(fs.existsSync(target), false, 'ffmpeg never ran');
});

test('garbage, a truncated file and a text file named .mp3 are unreadable, not crashes; the input format is forced', async () => {
  const wav = fs.readFileSync(speech('wav'));
  const cases: Array<[string, 'wav' | 'mp3' | 'm4a']> = [
    [tempFile('garbage.wav', Buffer.concat([Buffer.from('RIFF\0\0\0\0WAVE'), Buffer.alloc(5000, 0xab)])), 'wav'],
    [tempFile('truncated.m4a', fs.readFileSync(speech('m4a')).subarray(0, 400)), 'm4a'],
    [tempFile('text.mp3', 'hello, this is not audio\n'.repeat(200)), 'mp3'],
    // A real wav forced through the mp3 demuxer: the sniffed type decides, not ffmpeg's guess.
    [tempFile('wav-as-mp3.wav', wav), 'm4a'],
  ];
  for (const [file, format] of cases) {
    await assert.rejects(
      normaliseToPcm16kMono(file, path.join(out, `bad-${path.basename(file)}.wav`), { format, maxDurationMs: 60_000, timeoutMs: 30_000 }),
      (e: unknown) => e instanceof AudioProcessingError && e.reason === 'unreadable',
      path.basename(file),
    );
  }
});

test('the kill timeout ends a run that takes too long', async () => {
  const long = tone(600, 'mp3');
  await assert.rejects(
    normaliseToPcm16kMono(long, path.join(out, 'timeout.wav'), { format: 'mp3', maxDurationMs: 3_600_000, timeoutMs: 10 }),
    (e: unknown) => e instanceof AudioProcessingError && e.reason === 'timeout',
  );
});

test('a missing binary is a clear error', async () => {
  await assert.rejects(probeDurationMs(speech('wav'), { bin: '/nonexistent/ffprobe' }), (e: unknown) => e instanceof AudioProcessingError && e.reason === 'missing_tool');
});

test('sniffing decides by the bytes', () => {
  assert.equal(sniffAudio(fs.readFileSync(speech('wav')).subarray(0, 12)), 'wav');
  assert.equal(sniffAudio(fs.readFileSync(speech('mp3')).subarray(0, 12)), 'mp3');
  assert.equal(sniffAudio(fs.readFileSync(speech('m4a')).subarray(0, 12)), 'm4a');
  assert.equal(sniffAudio(Buffer.from([0xff, 0xfb, 0x90, 0x64, 0, 0, 0, 0, 0, 0, 0, 0])), 'mp3', 'a bare MPEG frame');
  assert.equal(sniffAudio(Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0])), null, 'sync bits with a reserved layout');
  assert.equal(sniffAudio(Buffer.from('%PDF-1.7 hello')), null);
  assert.equal(sniffAudio(Buffer.from('RIFF\0\0\0\0AVI ')), null, 'RIFF but not WAVE');
});

test('frames: round trip, and truncation, reordering, a flipped bit or another file id are detected', async () => {
  const key = newDataKey();
  const plain = Buffer.alloc(FRAME_SIZE * 3 + 123).map((_, i) => (i * 7) % 256);
  const chunks: Buffer[] = [];
  await pipeline(Readable.from([plain]), new FrameEncryptor(key, 'file-1'), async function* (src) {
    for await (const c of src) chunks.push(c as Buffer);
  });
  const cipher = Buffer.concat(chunks);
  const decrypt = async (bytes: Buffer, id = 'file-1') => {
    const outChunks: Buffer[] = [];
    await pipeline(Readable.from([bytes]), new FrameDecryptor(key, id, { requireLast: true }), async function* (src) {
      for await (const c of src) outChunks.push(c as Buffer);
    });
    return Buffer.concat(outChunks);
  };
  assert.ok((await decrypt(cipher)).equals(plain));
  const frame = FRAME_SIZE + 32;
  const atBoundary = cipher.subarray(0, 8 + 2 * frame);
  await assert.rejects(decrypt(atBoundary), /last frame/, 'cut at a frame boundary');
  await assert.rejects(decrypt(cipher.subarray(0, cipher.length - 5)), /truncated/);
  const swapped = Buffer.concat([cipher.subarray(0, 8), cipher.subarray(8 + frame, 8 + 2 * frame), cipher.subarray(8, 8 + frame), cipher.subarray(8 + 2 * frame)]);
  await assert.rejects(decrypt(swapped), /authenticate/);
  const flipped = Buffer.from(cipher);
  flipped[8 + frame + 100] = flipped[8 + frame + 100]! ^ 1;
  await assert.rejects(decrypt(flipped), /authenticate/);
  await assert.rejects(decrypt(cipher, 'file-2'), /authenticate/);
});
