/**
 * What the pipeline needs from its neighbours, as narrow structural interfaces: the audio
 * store (services.audio), ffprobe/ffmpeg (services/audio/ffmpeg.ts), speech to text
 * (services/ai/stt) and the note generator (services/ai/notes). services/index.ts passes the
 * real ones; nothing here knows how they work.
 */
import type { Db } from '../../../db/database.ts';
import type { NoteGenerator } from '../notes/index.ts';

export type PipelineAudioFormat = 'm4a' | 'wav' | 'mp3';

export interface PipelineAudio {
  /** The recording decrypted to a private temporary file for the duration of `fn`. */
  withPlainFile<T>(audioUuid: string, fn: (path: string) => Promise<T>): Promise<T>;
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
