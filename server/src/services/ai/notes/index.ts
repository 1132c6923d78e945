/**
 * Note generation: a transcript in, a traceable SOAP note out. Two generators behind one
 * interface, chosen by configuration: an OpenAI-compatible chat-completions endpoint
 * (AI_NOTES_URL) or, by default, the local clinical structurer. Both outputs go through the
 * same post-processing (post-process.ts), so source_map, flags and vitals mean the same.
 */
import type { Config } from '../../../config.ts';
import { createLocalStructurer } from './local-structurer.ts';
import { createOpenAiNoteGenerator } from './openai-generator.ts';
import type { NoteGenerator } from './types.ts';

export type { GeneratedNote, NoteGenerator, NoteInput, SoapSection, SourceMapEntry, TranscriptSegment } from './types.ts';
export { NoteGenerationError } from './types.ts';
export { createLocalStructurer, structure, structureNote, LOCAL_STRUCTURER } from './local-structurer.ts';
export { createOpenAiNoteGenerator } from './openai-generator.ts';
export { postProcess, findSupport } from './post-process.ts';
export { extractVitals, type VitalSigns } from './vitals.ts';

/** The configured generator: OpenAI-compatible when AI_NOTES_URL is set, else the local structurer. */
export function createNoteGenerator(config: Config['ai']['notes']): NoteGenerator {
  if (config.url) {
    return createOpenAiNoteGenerator({ url: config.url, apiKey: config.apiKey, model: config.model, timeoutMs: config.timeoutMs });
  }
  return createLocalStructurer();
}
