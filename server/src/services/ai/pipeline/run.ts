/**
 * The body of the `ai_process_audio` job: probe → normalise → transcribe → generate →
 * post-processed by the generator → `completed`, or `failed` with a message a clinician can act on.
 *
 * Safe to run twice: the run starts only from `processing`, and the final write is a
 * conditional update (`where status = 'processing'`) keyed by the transcription uuid, so after
 * a crash the second run either redoes the unfinished work or finds the row finished and stops.
 * A transient failure (a timeout, a provider's 5xx) is thrown back to graphile-worker, which
 * retries with its exponential backoff; the row becomes `failed` on the last attempt or at once
 * for a failure another attempt cannot fix.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { and, eq, sql } from 'drizzle-orm';
import { aiTranscriptions, audioFiles } from '@fieldchart/schema/db';
import { NO_ENGINE_MESSAGE, type Transcript } from '../stt/index.ts';
import type { AiPipelineDeps, PipelineAudioFormat } from './deps.ts';

export interface JobAttempt {
  /** graphile-worker's attempt counter for this job (1 on the first run). */
  readonly attempts: number;
  readonly maxAttempts: number;
}

export interface RunOutcome {
  readonly outcome: 'completed' | 'failed' | 'skipped';
  /** Where the time went (the bench subtracts provider time from the total). */
  readonly timings: { readonly totalMs: number; readonly sttMs: number; readonly generatorMs: number };
}

/** A failure whose message the clinician sees. */
export class PipelineFailure extends Error {
  override readonly name = 'PipelineFailure';
  constructor(
    readonly code: string,
    readonly clinicianMessage: string,
    readonly retryable: boolean,
  ) {
    super(code);
  }
}

const GENERIC_MESSAGE = 'The AI pipeline failed unexpectedly. Tap retry; if it fails again, contact support.';
const FORMATS: readonly PipelineAudioFormat[] = ['m4a', 'wav', 'mp3'];

/** Typed failures of STT, the generator and this module carry their own message; others get a generic one. */
export function failureOf(err: unknown): { code: string; message: string; retryable: boolean } {
  if (err && typeof err === 'object') {
    const e = err as { clinicianMessage?: unknown; retryable?: unknown; code?: unknown; name?: unknown };
    if (typeof e.clinicianMessage === 'string' && typeof e.retryable === 'boolean') {
      const code = typeof e.code === 'string' ? e.code : typeof e.name === 'string' ? String(e.name).replace(/Error$/, '').toLowerCase() || 'failed' : 'failed';
      return { code, message: e.clinicianMessage, retryable: e.retryable };
    }
  }
  // Database hiccups, a killed child process: another attempt may well succeed.
  return { code: 'unexpected', message: GENERIC_MESSAGE, retryable: true };
}

export function createRunner(deps: AiPipelineDeps) {
  const { db, clock, phi } = deps;

  async function finish(id: string, set: Partial<typeof aiTranscriptions.$inferInsert>, status: 'completed' | 'failed'): Promise<boolean> {
    return db.transaction(async (tx) => {
      const now = clock.now();
      const updated = await tx
        .update(aiTranscriptions)
        .set({ ...set, status, finishedAt: now, updatedAt: now })
        .where(and(eq(aiTranscriptions.id, id), eq(aiTranscriptions.status, 'processing')))
        .returning({ ownerId: aiTranscriptions.ownerId, visitId: aiTranscriptions.visitId });
      const row = updated[0];
      if (!row) return false;
      await deps.onFinished?.(tx, { userId: row.ownerId, transcriptionUuid: id, visitId: row.visitId, status });
      return true;
    });
  }

  return {
    async run(id: string, attempt: JobAttempt, signal?: AbortSignal): Promise<RunOutcome> {
      const t0 = performance.now();
      let sttMs = 0;
      let generatorMs = 0;
      const timings = () => ({ totalMs: performance.now() - t0, sttMs, generatorMs });
      const [row] = await db.select().from(aiTranscriptions).where(eq(aiTranscriptions.id, id));
      if (!row || row.status !== 'processing' || row.deletedAt) return { outcome: 'skipped', timings: timings() };
      await db
        .update(aiTranscriptions)
        .set({ attempts: sql`${aiTranscriptions.attempts} + 1`, startedAt: clock.now() })
        .where(and(eq(aiTranscriptions.id, id), eq(aiTranscriptions.status, 'processing')));
      const seal = (value: string, column: string) => phi.seal(value, 'ai_transcriptions', column, id);

      try {
        const stt = deps.stt;
        if (!stt) throw new PipelineFailure('stt_not_configured', NO_ENGINE_MESSAGE, false);
        const [audio] = await db.select({ format: audioFiles.format }).from(audioFiles).where(eq(audioFiles.id, row.audioId));
        if (!audio) throw new PipelineFailure('audio_missing', 'The recording is no longer stored on the server. Record and upload the dictation again.', false);
        const format = audio.format as PipelineAudioFormat;
        if (!FORMATS.includes(format)) throw new PipelineFailure('audio_format', 'The recording is not in a supported format (m4a, wav or mp3).', false);

        const { durationMs, transcript } = await deps.audio.withPlainFile(row.audioId, async (plain) => {
          // A private directory for the PCM copy (decrypted PHI): 0700, removed whatever happens.
          const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'fieldchart-ai-'));
          try {
            const pcm = path.join(dir, 'speech.wav');
            let duration: number;
            try {
              // ffprobe checks the duration before anything is decoded.
              ({ durationMs: duration } = await deps.media.normaliseToPcm16kMono(plain, pcm, {
                format,
                maxDurationMs: deps.maxDurationMs,
                timeoutMs: deps.normaliseTimeoutMs,
                ...(signal ? { signal } : {}),
              }));
            } catch (err) {
              if (signal?.aborted) throw err;
              throw asMediaFailure(err, deps.maxDurationMs);
            }
            const s0 = performance.now();
            const t: Transcript = await stt.transcribe(pcm, signal);
            sttMs = performance.now() - s0;
            return { durationMs: duration, transcript: t };
          } finally {
            await fs.rm(dir, { recursive: true, force: true });
          }
        }, signal);
        if (!transcript.text.trim()) {
          throw new PipelineFailure(
            'no_speech',
            'No speech was recognised in the recording. Check that the microphone was not muted and record the dictation again.',
            false,
          );
        }
        const g0 = performance.now();
        const generated = await deps.notes.generate(
          { transcript: transcript.text, segments: transcript.segments, discipline: row.discipline, encounterType: row.encounterType },
          signal,
        );
        generatorMs = performance.now() - g0;
        // Spans, audio times and unsupported sentences were settled by the generators' shared
        // post-processing (services/ai/notes/post-process.ts), which both generators run.
        const note = generated;
        await finish(
          id,
          {
            rawTranscriptEnc: seal(transcript.text, 'raw_transcript_enc'),
            segmentsEnc: seal(JSON.stringify(transcript.segments), 'segments_enc'),
            generatedSoapEnc: seal(JSON.stringify(note.generated_soap), 'generated_soap_enc'),
            sourceMapEnc: seal(JSON.stringify(note.source_map), 'source_map_enc'),
            verificationFlagsEnc: seal(JSON.stringify(note.verification_flags), 'verification_flags_enc'),
            vitalSignsEnc: seal(JSON.stringify(note.vital_signs), 'vital_signs_enc'),
            confidenceSummary: { ...note.confidence_summary },
            notMentioned: [...note.not_mentioned],
            audioDurationMs: Math.round(durationMs),
            sttEngine: transcript.engine,
            generator: note.generator,
            errorMessage: null,
            errorCode: null,
          },
          'completed',
        );
        return { outcome: 'completed', timings: timings() };
      } catch (err) {
        // A worker shutting down: the job goes back to the queue untouched.
        if (signal?.aborted) throw err;
        const failure = failureOf(err);
        if (failure.retryable && attempt.attempts < attempt.maxAttempts) throw err;
        await finish(id, { errorMessage: failure.message, errorCode: failure.code }, 'failed');
        return { outcome: 'failed', timings: timings() };
      }
    },
  };
}

/** ffprobe/ffmpeg failures (services/audio/ffmpeg.ts `reason`) in a clinician's words. */
function asMediaFailure(err: unknown, maxDurationMs: number): unknown {
  const reason = err && typeof err === 'object' && 'reason' in err ? (err as { reason: unknown }).reason : null;
  switch (reason) {
    case 'too_long':
      return new PipelineFailure(
        'audio_too_long',
        `The recording is longer than the ${Math.floor(maxDurationMs / 60_000)} minutes the server transcribes. Dictate the note in shorter parts.`,
        false,
      );
    case 'timeout':
      return new PipelineFailure('audio_timeout', 'Preparing the recording took too long; it will be retried.', true);
    case 'missing_tool':
      return new PipelineFailure('audio_tool_missing', 'The server cannot decode audio (ffmpeg is not installed). An administrator must install ffmpeg, then retry.', false);
    case 'unreadable':
    case 'failed':
      return new PipelineFailure('audio_unreadable', 'The recording could not be decoded. Record the dictation again; if it keeps failing, contact support.', false);
    default:
      return err;
  }
}
