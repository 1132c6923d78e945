/** Real audio files (espeak-ng speech, encoded by ffmpeg) and a streaming multipart client. */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { registerUser, type TestServer } from '../../helpers/test-server.ts';
import { scheduleVisit } from '../visits/visit-fixtures.ts';

export type User = Awaited<ReturnType<typeof registerUser>>;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-audio-fixtures-'));
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));

const cache = new Map<string, string>();

/** A short spoken dictation as wav (espeak-ng), mp3 or m4a (ffmpeg from that wav). */
export function speech(format: 'wav' | 'mp3' | 'm4a', text = 'Patient walked forty feet with a rolling walker. Blood pressure one thirty over eighty.'): string {
  const key = `${format}:${text}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const wav = path.join(dir, `speech-${cache.size}.wav`);
  execFileSync('espeak-ng', ['-w', wav, text], { stdio: 'ignore' });
  let out = wav;
  if (format !== 'wav') {
    out = path.join(dir, `speech-${cache.size}.${format}`);
    const codec = format === 'mp3' ? ['-c:a', 'libmp3lame', '-b:a', '64k'] : ['-c:a', 'aac', '-b:a', '64k'];
    execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-y', '-i', wav, ...codec, out], { stdio: 'ignore' });
  }
  cache.set(key, out);
  return out;
}

/** `seconds` of a 440 Hz tone, 8 kHz mono (ffmpeg's generator), for over-long and slow files. */
export function tone(seconds: number, format: 'wav' | 'mp3' = 'wav'): string {
  const out = path.join(dir, `tone-${seconds}.${format}`);
  if (!fs.existsSync(out)) {
    execFileSync('ffmpeg', ['-nostdin', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `sine=frequency=440:duration=${seconds}:sample_rate=8000`, '-ac', '1', ...(format === 'mp3' ? ['-c:a', 'libmp3lame', '-b:a', '16k'] : []), out], { stdio: 'ignore' });
  }
  return out;
}

export function tempFile(name: string, content: Buffer | string): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  return file;
}

export type Part =
  | { readonly name: string; readonly value: string }
  | { readonly name: string; readonly filename: string; readonly contentType: string; readonly body: Buffer | (() => AsyncIterable<Buffer>) };

/**
 * POSTs multipart/form-data, streaming file bodies chunk by chunk (a 60 MB test upload is
 * never built in memory). Answers status, headers and parsed JSON.
 */
export function postMultipart(
  url: string,
  token: string | null,
  parts: readonly Part[],
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }> {
  const boundary = `----fieldchart${Math.random().toString(16).slice(2)}`;
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST',
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, ...(token ? { authorization: `Bearer ${token}` } : {}), accept: 'application/json', ...headers },
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => (text += d));
      res.on('end', () => {
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // raw text
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
    });
    req.on('error', reject);
    void (async () => {
      const write = (chunk: Buffer | string) =>
        new Promise<void>((ok, fail) => {
          if (req.destroyed) return fail(new Error('request destroyed'));
          if (req.write(chunk)) ok();
          else req.once('drain', ok);
        });
      try {
        for (const p of parts) {
          if ('value' in p) {
            await write(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"\r\n\r\n${p.value}\r\n`);
          } else {
            await write(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"; filename="${p.filename}"\r\nContent-Type: ${p.contentType}\r\n\r\n`);
            if (Buffer.isBuffer(p.body)) await write(p.body);
            else for await (const chunk of p.body()) await write(chunk);
            await write('\r\n');
          }
        }
        req.end(`--${boundary}--\r\n`);
      } catch {
        // the server answered early and closed; the response handler reports it
      }
    })();
  });
}

export const fileOf = (filePath: string, contentType = 'application/octet-stream', filename = path.basename(filePath)): Part & { filename: string } => ({
  name: 'audio',
  filename,
  contentType,
  body: fs.readFileSync(filePath),
});

/** A clinician with one visit of their own. */
export async function clinicianWithVisit(server: TestServer): Promise<{ user: User; visit: string }> {
  const user = await registerUser(server);
  const visit = await scheduleVisit(server, user, { visit_date: '2026-11-23', start_time: '09:30', address: '5 Elm St' });
  return { user, visit };
}

export const upload = (server: TestServer, token: string | null, parts: readonly Part[], headers: Record<string, string> = {}) =>
  postMultipart(`${server.url}/api/therapist/v1/visit-audio-upload`, token, parts, headers);

/** Every file under `root`, recursively. */
export function filesUnder(root: string): string[] {
  if (!fs.existsSync(root)) return [];
  return fs.readdirSync(root, { recursive: true, withFileTypes: true }).filter((d) => d.isFile()).map((d) => path.join(d.parentPath, d.name));
}
