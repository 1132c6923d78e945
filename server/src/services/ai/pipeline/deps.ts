/**
 * What the pipeline needs from its neighbours, as narrow structural interfaces: the audio
 * store (services.audio), ffprobe/ffmpeg (services/audio/ffmpeg.ts), speech to text
 * (services/ai/stt) and the note generator (services/ai/notes). services/index.ts passes the
 * real ones; nothing here knows how they work.
 */
import type { Db } from '../../../db/database.ts';
import type { TranscriptSegment } from '../stt/index.ts';

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

export type SoapSectionName = 'subjective' | 'objective' | 'assessment' | 'plan';
export const SOAP_SECTIONS: readonly SoapSectionName[] = ['subjective', 'objective', 'assessment', 'plan'];

export interface NoteSourceEntry {
  readonly sentence: string;
  readonly char_start: number;
  readonly char_end: number;
  readonly start_ms?: number;
  readonly end_ms?: number;
  readonly unsupported?: boolean;
}

export interface PipelineNote {
  readonly generated_soap: Record<SoapSectionName, string>;
  readonly source_map: Record<SoapSectionName, readonly NoteSourceEntry[]>;
  readonly confidence_summary: Record<SoapSectionName, number>;
  readonly verification_flags: readonly string[];
  readonly not_mentioned: readonly string[];
  readonly vital_signs: Record<string, unknown>;
  readonly generator: string;
}

export interface PipelineNotes {
  readonly name: string;
  generate(
    input: { readonly transcript: string; readonly segments?: readonly TranscriptSegment[]; readonly discipline: string; readonly encounterType: string },
    signal?: AbortSignal,
  ): Promise<PipelineNote>;
}

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
