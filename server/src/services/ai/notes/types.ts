import type { Section } from './classify.ts';

export type SoapSection = Section;

export interface TranscriptSegment {
  readonly start_ms: number;
  readonly end_ms: number;
  readonly text: string;
  readonly char_start: number;
  readonly char_end: number;
}

export interface NoteInput {
  readonly transcript: string;
  readonly segments?: readonly TranscriptSegment[];
  readonly discipline: string;
  readonly encounterType: string;
}

export interface SourceMapEntry {
  readonly sentence: string;
  readonly char_start: number;
  readonly char_end: number;
  readonly start_ms?: number;
  readonly end_ms?: number;
  readonly unsupported?: boolean;
}

export interface GeneratedNote {
  readonly generated_soap: Record<SoapSection, string>;
  readonly source_map: Record<SoapSection, readonly SourceMapEntry[]>;
  /** 0..1 per section */
  readonly confidence_summary: Record<SoapSection, number>;
  readonly verification_flags: readonly string[];
  readonly not_mentioned: readonly string[];
  readonly vital_signs: Record<string, unknown>;
  /** 'local-structurer' | 'openai:<model>' */
  readonly generator: string;
}

export interface NoteGenerator {
  readonly name: string;
  generate(input: NoteInput, signal?: AbortSignal): Promise<GeneratedNote>;
}

/**
 * A note could not be generated. `clinicianMessage` is safe to show (no transcript text);
 * `retryable` says whether running the job again may help (a timeout, a 5xx) or not (the
 * provider rejected the request, or answered with something that is not a note).
 */
export class NoteGenerationError extends Error {
  override readonly name = 'NoteGenerationError';
  readonly clinicianMessage: string;
  readonly retryable: boolean;
  constructor(clinicianMessage: string, retryable: boolean, options?: { cause?: unknown }) {
    super(clinicianMessage, options);
    this.clinicianMessage = clinicianMessage;
    this.retryable = retryable;
  }
}
