/**
 * An OpenAI-compatible `POST /v1/audio/transcriptions` client (hosted Whisper and the
 * self-hosted whisper servers speak it): the WAV goes up as multipart, streamed from disk,
 * with `response_format=verbose_json` and `timestamp_granularities[]=segment` so segments
 * come back timed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { SttError } from './errors.ts';
import { joinSegments } from './segments.ts';
import type { SpeechToText, Transcript } from './types.ts';

export interface OpenAiSttOptions {
  /** Base URL; `/v1/audio/transcriptions` is appended unless it already ends the path. */
  readonly url: string;
  readonly apiKey: string | null;
  readonly model: string;
  readonly timeoutMs: number;
}

const verboseJson = z.object({
  text: z.string(),
  segments: z
    .array(z.object({ start: z.number().nonnegative(), end: z.number().nonnegative(), text: z.string() }))
    .optional(),
});

export function endpointOf(url: string): string {
  const u = new URL(url);
  const p = u.pathname.replace(/\/+$/, '');
  if (p.endsWith('/audio/transcriptions')) return u.toString();
  u.pathname = p.endsWith('/v1') ? `${p}/audio/transcriptions` : `${p}/v1/audio/transcriptions`;
  return u.toString();
}

export function createOpenAiStt(opts: OpenAiSttOptions): SpeechToText {
  const endpoint = endpointOf(opts.url);
  const name = `openai:${opts.model}`;
  return {
    name,
    async transcribe(pcmWavPath: string, signal?: AbortSignal): Promise<Transcript> {
      const form = new FormData();
      form.append('file', await fs.openAsBlob(pcmWavPath, { type: 'audio/wav' }), path.basename(pcmWavPath));
      form.append('model', opts.model);
      form.append('response_format', 'verbose_json');
      form.append('timestamp_granularities[]', 'segment');
      const timeout = AbortSignal.timeout(opts.timeoutMs);
      const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
      let res: Response;
      try {
        res = await fetch(endpoint, {
          method: 'POST',
          body: form,
          headers: opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {},
          signal: combined,
        });
      } catch (err) {
        if (timeout.aborted) {
          throw new SttError('stt_timeout', 'The speech-to-text service did not answer in time; the recording will be retried.', true, `after ${opts.timeoutMs} ms`);
        }
        if (signal?.aborted) throw err;
        throw new SttError('stt_unreachable', 'The speech-to-text service could not be reached; the recording will be retried.', true, (err as Error).name);
      }
      const body = await readBody(res, combined, opts.timeoutMs, timeout);
      if (res.status === 401 || res.status === 403) {
        throw new SttError('stt_auth', 'The speech-to-text service refused the server’s credentials. An administrator must check STT_API_KEY, then retry.', false, `HTTP ${res.status}`);
      }
      if (res.status === 429 || res.status >= 500) {
        throw new SttError('stt_unavailable', 'The speech-to-text service is temporarily unavailable; the recording will be retried.', true, `HTTP ${res.status}`);
      }
      if (!res.ok) {
        throw new SttError('stt_rejected', 'The speech-to-text service could not process this recording. Record the dictation again or contact support.', false, `HTTP ${res.status}`);
      }
      let json: unknown;
      try {
        json = JSON.parse(body);
      } catch {
        throw malformed('not JSON');
      }
      const parsed = verboseJson.safeParse(json);
      if (!parsed.success) throw malformed('not a verbose_json transcription');
      const { text, segments } = parsed.data;
      if (segments && segments.length > 0) {
        if (segments.some((s) => s.end < s.start)) throw malformed('segment ends before it starts');
        return { ...joinSegments(segments.map((s) => ({ start_ms: s.start * 1000, end_ms: s.end * 1000, text: s.text }))), engine: name };
      }
      // No timings (a server that ignores the granularity): the text alone, one untimed segment.
      const joined = joinSegments([{ start_ms: 0, end_ms: 0, text }]);
      return { text: joined.text, segments: [], engine: name };
    },
  };
}

function malformed(detail: string): SttError {
  return new SttError('stt_malformed', 'The speech-to-text service answered with something that is not a transcript. An administrator must check STT_URL and STT_MODEL, then retry.', false, detail);
}

async function readBody(res: Response, signal: AbortSignal, timeoutMs: number, timeout: AbortSignal): Promise<string> {
  try {
    return await res.text();
  } catch (err) {
    if (timeout.aborted) throw new SttError('stt_timeout', 'The speech-to-text service did not answer in time; the recording will be retried.', true, `body after ${timeoutMs} ms`);
    if (signal.aborted) throw err;
    throw new SttError('stt_unreachable', 'The speech-to-text service could not be reached; the recording will be retried.', true, 'body read failed');
  }
}
