/**
 * The speech-to-text interface, apart from index.ts (which chooses an engine) so each engine
 * can implement it without importing the module that imports it.
 */
import type { TranscriptSegment } from '../notes/types.ts';

/** One timed piece of the transcript (char_start/char_end index `Transcript.text`): the note generator's input type. */
export type { TranscriptSegment };

export interface Transcript {
  readonly text: string;
  readonly segments: readonly TranscriptSegment[];
  readonly engine: string;
}

export interface SpeechToText {
  readonly name: string;
  transcribe(pcmWavPath: string, signal?: AbortSignal): Promise<Transcript>;
}
