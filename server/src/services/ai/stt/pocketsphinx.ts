/**
 * The offline engine: Debian's pocketsphinx (5prealpha) with its US English model, run as a
 * child process (`pocketsphinx_continuous -infile x.wav -time yes`) so decoding never blocks
 * the event loop. With `-time yes` it prints, per utterance, the hypothesis line followed by
 * one `word start end confidence` line per word (`<s>`, `</s>`, `<sil>`, `[NOISE]` included);
 * an utterance becomes one timed segment.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { SttError } from './errors.ts';
import { joinSegments } from './segments.ts';
import type { SpeechToText, Transcript } from './types.ts';

export interface PocketsphinxOptions {
  readonly bin: string;
  readonly modelDir: string;
  readonly timeoutMs: number;
}

const WORD = /^(\S+) (\d+(?:\.\d+)?) (\d+(?:\.\d+)?) (-?\d+(?:\.\d+)?)$/;

/** Whether the binary is on PATH (or at the given path) and the model files exist. */
export function pocketsphinxInstalled(opts: Pick<PocketsphinxOptions, 'bin' | 'modelDir'>): boolean {
  const modelOk = ['en-us', 'en-us.lm.bin', 'cmudict-en-us.dict'].every((f) => fs.existsSync(path.join(opts.modelDir, f)));
  if (!modelOk) return false;
  if (opts.bin.includes('/')) return isExecutable(opts.bin);
  return (process.env['PATH'] ?? '').split(path.delimiter).some((dir) => dir && isExecutable(path.join(dir, opts.bin)));
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Parses `-time yes` output into utterances of words (fillers and silences dropped). */
export function parsePocketsphinxOutput(stdout: string): { start_ms: number; end_ms: number; text: string }[] {
  const utterances: { start_ms: number; end_ms: number; text: string }[] = [];
  let words: { word: string; start: number; end: number }[] = [];
  const flush = () => {
    if (words.length > 0) {
      utterances.push({
        start_ms: (words[0] as { start: number }).start * 1000,
        end_ms: (words[words.length - 1] as { end: number }).end * 1000,
        text: words.map((w) => w.word).join(' '),
      });
    }
    words = [];
  };
  for (const line of stdout.split('\n')) {
    const m = WORD.exec(line.trim());
    if (!m) continue;
    const token = m[1] as string;
    if (token === '<s>') {
      flush();
      continue;
    }
    if (token === '</s>') {
      flush();
      continue;
    }
    if (token.startsWith('<') || token.startsWith('[') || token.startsWith('++')) continue;
    words.push({ word: token.replace(/\(\d+\)$/, ''), start: Number(m[2]), end: Number(m[3]) });
  }
  flush();
  return utterances;
}

export function createPocketsphinxStt(opts: PocketsphinxOptions): SpeechToText {
  const name = 'pocketsphinx:en-us';
  return {
    name,
    transcribe(pcmWavPath: string, signal?: AbortSignal): Promise<Transcript> {
      return new Promise<Transcript>((resolve, reject) => {
        const args = [
          '-infile', pcmWavPath,
          '-time', 'yes',
          '-logfn', '/dev/null',
          '-hmm', path.join(opts.modelDir, 'en-us'),
          '-lm', path.join(opts.modelDir, 'en-us.lm.bin'),
          '-dict', path.join(opts.modelDir, 'cmudict-en-us.dict'),
        ];
        // No shell: the path is an argument, never parsed.
        const child = spawn(opts.bin, args, { stdio: ['ignore', 'pipe', 'ignore'], signal, timeout: opts.timeoutMs, killSignal: 'SIGKILL' });
        const chunks: Buffer[] = [];
        let bytes = 0;
        child.stdout.on('data', (c: Buffer) => {
          bytes += c.length;
          // A transcript of the longest accepted recording is far below this; more is a runaway.
          if (bytes > 32 * 1024 * 1024) child.kill('SIGKILL');
          else chunks.push(c);
        });
        child.on('error', (err: NodeJS.ErrnoException) => {
          if (err.name === 'AbortError') reject(err);
          else if (err.code === 'ENOENT') reject(new SttError('stt_not_installed', 'The offline speech-to-text engine (pocketsphinx) is not installed on the server. An administrator must install it or set STT_URL, then retry.', false, 'ENOENT'));
          else reject(new SttError('stt_engine_failed', 'The offline speech-to-text engine failed; the recording will be retried.', true, err.code ?? err.name));
        });
        child.on('close', (code, sig) => {
          if (signal?.aborted) return; // the 'error' event rejected already
          if (code !== 0) {
            const timedOut = sig === 'SIGKILL';
            reject(
              timedOut
                ? new SttError('stt_timeout', 'Transcription took longer than the server allows (STT_TIMEOUT_MS); the recording will be retried.', true, `killed after ${opts.timeoutMs} ms`)
                : new SttError('stt_engine_failed', 'The offline speech-to-text engine could not read this recording. Record the dictation again or contact support.', false, `exit ${code}`),
            );
            return;
          }
          const joined = joinSegments(parsePocketsphinxOutput(Buffer.concat(chunks).toString('utf8')));
          resolve({ ...joined, engine: name });
        });
      });
    },
  };
}
