import { spawn } from 'node:child_process';
import type { AudioFormat } from './sniff.ts';

/**
 * ffprobe and ffmpeg, locked down: spawned without a shell (arguments, never a command line),
 * input format forced from the sniffed type (no probing of what a file claims to be), only
 * the `file` and `pipe` protocols (a crafted playlist cannot make ffmpeg fetch a URL), no
 * stdin, duration (-t) and output size (-fs) caps, and a kill timeout. They run as child
 * processes, so the event loop stays free while they work. Their stderr is read (bounded)
 * but never logged: errors carry a short classification, not ffmpeg's text.
 */

export class AudioProcessingError extends Error {
  override readonly name = 'AudioProcessingError';
  constructor(
    message: string,
    /** 'too_long' | 'unreadable' | 'timeout' | 'missing_tool' | 'failed' */
    readonly reason: 'too_long' | 'unreadable' | 'timeout' | 'missing_tool' | 'failed',
  ) {
    super(message);
  }
}

export interface FfmpegBinaries {
  readonly ffmpegBin?: string;
  readonly ffprobeBin?: string;
}

const DEMUXER: Record<AudioFormat, string> = { m4a: 'mov', wav: 'wav', mp3: 'mp3' };
const STDERR_KEPT = 4096;

interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(bin: string, args: string[], opts: { timeoutMs: number; signal?: AbortSignal | undefined }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], shell: false, windowsHide: true });
    let stdout = '';
    let stderr = '';
    let settled = false;
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      if (stdout.length < 65_536) stdout += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      // Only the tail is kept, for classifying the failure; it is never logged.
      stderr = (stderr + d).slice(-STDERR_KEPT);
    });
    const kill = () => {
      if (child.exitCode === null) child.kill('SIGKILL');
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, opts.timeoutMs);
    const onAbort = () => kill();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      fn();
    };
    child.on('error', (err: NodeJS.ErrnoException) =>
      finish(() =>
        reject(
          err.code === 'ENOENT'
            ? new AudioProcessingError(`${bin} is not installed (Debian package ffmpeg)`, 'missing_tool')
            : new AudioProcessingError(`${bin} could not be started`, 'failed'),
        ),
      ),
    );
    child.on('close', (code) =>
      finish(() => {
        if (opts.signal?.aborted) return reject(opts.signal.reason instanceof Error ? opts.signal.reason : new Error('aborted'));
        if (timedOut) return reject(new AudioProcessingError(`${bin} took longer than ${opts.timeoutMs} ms`, 'timeout'));
        resolve({ code, stdout, stderr });
      }),
    );
  });
}

/**
 * The duration of an audio file in milliseconds, read from its container by ffprobe without
 * decoding. A file ffprobe cannot read (garbage, truncated header) is `unreadable`.
 */
export async function probeDurationMs(
  file: string,
  opts: { timeoutMs?: number; format?: AudioFormat; bin?: string; signal?: AbortSignal } = {},
): Promise<number> {
  const args = [
    '-v', 'error',
    '-protocol_whitelist', 'file,pipe',
    ...(opts.format ? ['-f', DEMUXER[opts.format]] : []),
    '-show_entries', 'format=duration',
    '-of', 'default=noprint_wrappers=1:nokey=1',
    `file:${file}`,
  ];
  const r = await run(opts.bin ?? 'ffprobe', args, { timeoutMs: opts.timeoutMs ?? 30_000, signal: opts.signal });
  const seconds = Number.parseFloat(r.stdout.trim());
  if (r.code !== 0 || !Number.isFinite(seconds) || seconds <= 0) {
    throw new AudioProcessingError('The audio file could not be read (damaged or not audio)', 'unreadable');
  }
  return Math.round(seconds * 1000);
}

/**
 * Decodes to 16 kHz mono 16-bit PCM WAV (what speech engines take). The duration is checked
 * with ffprobe first, so an over-long file is refused before anything is decoded; `-t` and
 * `-fs` cap the work even if the container lied about its duration.
 */
export async function normaliseToPcm16kMono(
  inPath: string,
  outPath: string,
  opts: { format: AudioFormat; maxDurationMs: number; timeoutMs: number; signal?: AbortSignal; ffmpegBin?: string; ffprobeBin?: string },
): Promise<{ durationMs: number }> {
  const durationMs = await probeDurationMs(inPath, {
    format: opts.format,
    timeoutMs: Math.min(opts.timeoutMs, 30_000),
    ...(opts.ffprobeBin ? { bin: opts.ffprobeBin } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  if (durationMs > opts.maxDurationMs) {
    throw new AudioProcessingError(
      `The recording is ${Math.ceil(durationMs / 60_000)} minutes long; the limit is ${Math.floor(opts.maxDurationMs / 60_000)} minutes`,
      'too_long',
    );
  }
  const seconds = opts.maxDurationMs / 1000;
  // 16-bit mono at 16 kHz: 32 000 bytes a second, plus the WAV header and some slack.
  const maxOutBytes = Math.ceil(seconds * 32_000) + 64 * 1024;
  const args = [
    '-nostdin',
    '-hide_banner',
    '-loglevel', 'error',
    '-protocol_whitelist', 'file,pipe',
    '-f', DEMUXER[opts.format],
    '-i', `file:${inPath}`,
    '-t', seconds.toFixed(3),
    '-vn', '-sn', '-dn',
    '-map_metadata', '-1',
    '-ac', '1',
    '-ar', '16000',
    '-c:a', 'pcm_s16le',
    '-fs', String(maxOutBytes),
    '-f', 'wav',
    '-y',
    `file:${outPath}`,
  ];
  const r = await run(opts.ffmpegBin ?? 'ffmpeg', args, { timeoutMs: opts.timeoutMs, signal: opts.signal });
  if (r.code !== 0) throw new AudioProcessingError('The audio could not be decoded (damaged or unsupported encoding)', 'unreadable');
  return { durationMs };
}
