/**
 * Upload throughput of a 100 MB recording beside a plain file copy of the same bytes, in the
 * same run, with the server's memory sampled during each upload:
 *
 *   copy       the file streamed to another file on the same disk (read → write, 64 KiB chunks)
 *   multipart  POST /visit-audio-upload: multipart parsed as it streams, type sniffed, every
 *              64 KiB encrypted (AES-256-GCM), written to the data dir, the row recorded
 *   tus        the same bytes as one tus PATCH to /uploads/{id} (encrypted frames appended),
 *              then handed over with services.audio.fromUpload is NOT included (server-side)
 *
 * The server runs in a child process (support/audio-servers.ts; PGlite, or PostgreSQL with
 * BENCH_DATABASE_URL); its RSS is sampled every 10 ms while each upload runs ("flat" means
 * the growth stays far below the file size). BENCH_AUDIO_MB (default 100, 1–105) sets the size;
 * BENCH_ROUNDS (default 3, 1–10) repeats each target (best and median are printed). The
 * server's CPU time per upload is printed too: on a loaded machine the wall-clock ratio
 * mostly measures the competition for CPU, the CPU time what the upload path costs.
 * Output: a table, then one JSON line (last on stdout).
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { AudioServers, RssSample } from './support/audio-servers.ts';
import { setting, startChild, stopChild } from './support/measure.ts';

const MB = setting('BENCH_AUDIO_MB', 100, 1, 105);
const ROUNDS = setting('BENCH_ROUNDS', 3, 1, 10);
const bytes = MB * 1024 * 1024;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-bench-audio-'));
const source = path.join(dir, 'recording.wav');
{
  // A WAV header, then pseudo-random bytes (incompressible, like real audio to a disk).
  const fd = fs.openSync(source, 'w');
  const head = Buffer.alloc(44);
  head.write('RIFF', 0, 'latin1');
  head.writeUInt32LE(bytes - 8, 4);
  head.write('WAVEfmt ', 8, 'latin1');
  fs.writeSync(fd, head);
  const block = randomBytes(1024 * 1024);
  for (let written = 44; written < bytes; written += block.length) fs.writeSync(fd, block, 0, Math.min(block.length, bytes - written));
  fs.closeSync(fd);
}

const { child, ready: s } = await startChild<AudioServers>(new URL('./support/audio-servers.ts', import.meta.url));
const rssDuring = async <T>(fn: () => Promise<T>): Promise<{ result: T; rss: RssSample }> => {
  child.send('sample-start');
  const result = await fn();
  const rss = await new Promise<RssSample>((resolve) => {
    const on = (m: { rss?: RssSample }) => {
      if (!m.rss) return;
      child.off('message', on);
      resolve(m.rss);
    };
    child.on('message', on);
    child.send('sample-stop');
  });
  return { result, rss };
};

function request(url: string, method: string, headers: Record<string, string>, body: (req: http.ClientRequest) => Promise<void>): Promise<{ status: number; text: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers });
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
    });
    body(req).catch(reject);
  });
}

async function copy(): Promise<void> {
  const target = path.join(dir, 'copy.wav');
  await pipeline(fs.createReadStream(source, { highWaterMark: 64 * 1024 }), fs.createWriteStream(target));
  fs.rmSync(target);
}

async function multipart(): Promise<void> {
  const boundary = `----bench${Date.now()}`;
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="schedule_uuid"\r\n\r\n${s.visit}\r\n--${boundary}\r\nContent-Disposition: form-data; name="audio"; filename="r.wav"\r\nContent-Type: audio/wav\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  const res = await request(
    `${s.apiOrigin}${s.apiPrefix}/visit-audio-upload`,
    'POST',
    { authorization: `Bearer ${s.token}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(Buffer.byteLength(head) + bytes + Buffer.byteLength(tail)) },
    async (req) => {
      req.write(head);
      await pipeline(fs.createReadStream(source, { highWaterMark: 64 * 1024 }), async function* (src) {
        for await (const chunk of src) if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
      });
      req.end(tail);
    },
  );
  if (res.status !== 200) throw new Error(`multipart upload answered ${res.status}: ${res.text.slice(0, 200)}`);
}

async function tus(): Promise<void> {
  const auth = { authorization: `Bearer ${s.token}`, 'tus-resumable': '1.0.0' };
  const created = await request(`${s.apiOrigin}${s.apiPrefix}/uploads`, 'POST', { ...auth, 'upload-length': String(bytes) }, async (req) => void req.end());
  if (created.status !== 201) throw new Error(`tus create answered ${created.status}`);
  const res = await request(
    `${s.apiOrigin}${created.headers.location}`,
    'PATCH',
    { ...auth, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream', 'content-length': String(bytes) },
    async (req) => {
      await pipeline(fs.createReadStream(source, { highWaterMark: 64 * 1024 }), req);
    },
  );
  if (res.status !== 204) throw new Error(`tus PATCH answered ${res.status}: ${res.text.slice(0, 200)}`);
  await request(`${s.apiOrigin}${created.headers.location}`, 'DELETE', auth, async (req) => void req.end());
}

interface Row {
  name: string;
  what: string;
  bestMs: number;
  medianMs: number;
  mbPerSec: number;
  ratioToCopy: number;
  rssGrowthMb: number | null;
  /** Server CPU time of the best round (user + system). */
  serverCpuMs: number | null;
}

try {
  process.stderr.write(`audio-upload: ${s.backend}, ${MB} MB file, ${ROUNDS} round(s) per target\n`);
  const targets: Array<[string, string, () => Promise<void>, boolean]> = [
    ['copy', 'plain file copy (stream, same disk)', copy, false],
    ['multipart', `POST ${s.apiPrefix}/visit-audio-upload`, multipart, true],
    ['tus', `tus PATCH ${s.apiPrefix}/uploads/{id}`, tus, true],
  ];
  const rows: Row[] = [];
  let copyBest = 0;
  for (const [name, what, fn, server] of targets) {
    const times: number[] = [];
    let growth = 0;
    let cpuMs = Infinity;
    for (let i = 0; i < ROUNDS; i++) {
      const t0 = performance.now();
      if (server) {
        const { rss } = await rssDuring(fn);
        growth = Math.max(growth, rss.peak - rss.before);
        cpuMs = Math.min(cpuMs, rss.cpuMs);
      } else {
        await fn();
      }
      times.push(performance.now() - t0);
    }
    times.sort((a, b) => a - b);
    const best = times[0] ?? 0;
    if (name === 'copy') copyBest = best;
    rows.push({
      name,
      what,
      bestMs: Math.round(best),
      medianMs: Math.round(times[Math.floor(times.length / 2)] ?? 0),
      mbPerSec: Number((MB / (best / 1000)).toFixed(1)),
      ratioToCopy: Number((copyBest / best).toFixed(3)),
      rssGrowthMb: server ? Number((growth / 1e6).toFixed(1)) : null,
      serverCpuMs: server ? cpuMs : null,
    });
  }
  console.log('target      best ms  median ms    MB/s  × copy  server CPU ms  server RSS growth');
  for (const r of rows) {
    console.log(
      `${r.name.padEnd(10)} ${String(r.bestMs).padStart(8)} ${String(r.medianMs).padStart(10)} ${String(r.mbPerSec).padStart(7)} ${r.ratioToCopy.toFixed(2).padStart(7)}  ${String(r.serverCpuMs ?? '—').padStart(13)}  ${r.rssGrowthMb === null ? '—' : `${r.rssGrowthMb} MB (file ${MB} MB)`}`,
    );
  }
  console.log(JSON.stringify({ bench: 'audio-upload', backend: s.backend, fileMb: MB, rounds: ROUNDS, loadavg: os.loadavg()[0], rows }));
} finally {
  await stopChild(child);
  fs.rmSync(dir, { recursive: true, force: true });
}
