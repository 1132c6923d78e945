/**
 * What the pipeline needs from its neighbours, as narrow structural interfaces: the audio
 * store (services.audio), ffprobe/ffmpeg (services/audio/ffmpeg.ts), speech to text
 * (services/ai/stt) and the note generator (services/ai/notes). services/index.ts passes the
 * real ones; nothing here knows how they work.
 */
import type { Clock } from '../../../clock.ts';
import type { Config } from '../../../config.ts';
import type { Db } from '../../../db/database.ts';
import type { PhiCrypto } from '../../../security/phi-crypto.ts';
import type { AuditLog } from '../../audit/audit-log.ts';
import type { NoteGenerator } from '../notes/index.ts';
import type { SpeechToText } from '../stt/types.ts';

export type PipelineAudioFormat = 'm4a' | 'wav' | 'mp3';

export interface PipelineAudio {
  /** The recording decrypted to a private temporary file for the duration of `fn`; `signal` gives up the read. */
  withPlainFile<T>(audioUuid: string, fn: (path: string) => Promise<T>, signal?: AbortSignal): Promise<T>;
}

export interface PipelineMedia {
  /** ffprobe's duration check, then ffmpeg to 16 kHz mono PCM WAV (services/audio/ffmpeg.ts). */
  normaliseToPcm16kMono(
    inPath: string,
    outPath: string,
    opts: { format: PipelineAudioFormat; maxDurationMs: number; timeoutMs: number; signal?: AbortSignal },
  ): Promise<{ durationMs: number }>;
}

/** The note generator (services/ai/notes): its own interface, taken as it is. */
export type PipelineNotes = NoteGenerator;

export interface FinishedEvent {
  readonly userId: string;
  readonly transcriptionUuid: string;
  readonly visitId: string;
  readonly status: 'completed' | 'failed';
}

/**
 * Called inside the transaction that finishes a run (completed or failed), so whatever it
 * writes (a notification record) commits with the status or not at all.
 */
export type OnFinished = (tx: Db, event: FinishedEvent) => Promise<void>;

/** Everything createAiPipeline (index.ts) and its job body (run.ts) are given. */
export interface AiPipelineDeps {
  readonly db: Db;
  readonly clock: Clock;
  readonly phi: PhiCrypto;
  readonly audit: AuditLog;
  readonly config: Config['ai'];
  readonly stt: SpeechToText | null;
  readonly notes: PipelineNotes;
  readonly audio: PipelineAudio;
  readonly media: PipelineMedia;
  /** Longest recording accepted (ffprobe's duration is checked before any decoding). */
  readonly maxDurationMs: number;
  /** Wall-clock cap of the ffmpeg normalisation. */
  readonly normaliseTimeoutMs: number;
  readonly onFinished?: OnFinished | undefined;
}
