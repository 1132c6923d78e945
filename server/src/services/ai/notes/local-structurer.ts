/**
 * The embedded default generator: no model, no network. Cuts the transcript into cleaned
 * clauses (clauses.ts), sorts each into a section (classify.ts) and hands the draft to the
 * shared post-processing. It only ever emits the transcript's own words.
 */
import { clausesOf } from './clauses.ts';
import { classifyClause, type Section } from './classify.ts';
import { postProcess, type DraftSentence } from './post-process.ts';
import type { GeneratedNote, NoteGenerator, NoteInput } from './types.ts';

export const LOCAL_STRUCTURER = 'local-structurer';

export interface StructuredClause extends DraftSentence {
  readonly section: Section;
  readonly char_start: number;
  readonly char_end: number;
  readonly confidence: number;
}

/** The clauses of a transcript with their sections, before post-processing (the evaluation reads this). */
export function structure(transcript: string, discipline: string): StructuredClause[] {
  return clausesOf(transcript).map((c) => {
    const k = classifyClause(c.text, discipline);
    return { text: c.text, char_start: c.char_start, char_end: c.char_end, section: k.section, confidence: k.confidence };
  });
}

export function structureNote(input: NoteInput): GeneratedNote {
  const sections: Record<Section, StructuredClause[]> = { subjective: [], objective: [], assessment: [], plan: [] };
  for (const c of structure(input.transcript, input.discipline)) sections[c.section].push(c);
  return postProcess(input, { sections, generator: LOCAL_STRUCTURER });
}

export function createLocalStructurer(): NoteGenerator {
  return {
    name: LOCAL_STRUCTURER,
    async generate(input, signal) {
      signal?.throwIfAborted();
      return structureNote(input);
    },
  };
}
