/**
 * The embedded default generator: no model, no network. Cuts the transcript into cleaned
 * clauses (clauses.ts), sorts each into a section (classify.ts) and hands the draft to the
 * shared post-processing. It only ever emits the transcript's own words.
 */
import { clauseStream } from './clauses.ts';
import { classifyClause, type Section } from './classify.ts';
import { postProcessSteps, runSteps, runStepsPaced, type DraftSentence } from './post-process.ts';
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
  return runSteps(structureSteps(transcript, discipline));
}

function* structureSteps(transcript: string, discipline: string): Generator<void, StructuredClause[]> {
  const out: StructuredClause[] = [];
  for (const c of clauseStream(transcript)) {
    yield;
    if (!c) continue;
    const k = classifyClause(c.text, discipline);
    out.push({ text: c.text, char_start: c.char_start, char_end: c.char_end, section: k.section, confidence: k.confidence });
  }
  return out;
}

function* noteSteps(input: NoteInput): Generator<void, GeneratedNote> {
  const sections: Record<Section, StructuredClause[]> = { subjective: [], objective: [], assessment: [], plan: [] };
  for (const c of yield* structureSteps(input.transcript, input.discipline)) sections[c.section].push(c);
  return yield* postProcessSteps(input, { sections, generator: LOCAL_STRUCTURER });
}

/** The note, computed at once (the CLI, tests). */
export function structureNote(input: NoteInput): GeneratedNote {
  return runSteps(noteSteps(input));
}

export function createLocalStructurer(): NoteGenerator {
  return {
    name: LOCAL_STRUCTURER,
    async generate(input, signal) {
      signal?.throwIfAborted();
      // in slices of a few milliseconds: the worker may share the API's event loop
      return runStepsPaced(noteSteps(input), signal);
    },
  };
}
