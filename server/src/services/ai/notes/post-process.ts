/**
 * What every generator's draft goes through before a clinician sees it: each sentence is
 * traced to the transcript span it came from (and to audio time when the engine gave
 * segments), a sentence without support is removed from the text and flagged, and the
 * confidence, verification flags, vital signs and not-mentioned checklist items are derived.
 *
 * Decision on unsupported sentences: they are REMOVED from `generated_soap` (a clinician
 * skimming the note must not sign words nobody said) and kept visible twice: in
 * `verification_flags` ("Removed, not found in the transcript: …") and as a `source_map`
 * entry with `unsupported: true`, whose span is the closest partial match (empty at 0 when
 * nothing matched).
 */
import { checklistFor, matchChecklist } from '@fieldchart/schema/checklists';
import { SOAP_SECTIONS } from '@fieldchart/schema/rules';
import { tokenize, type Token } from './clauses.ts';
import { classifyClause, type Section } from './classify.ts';
import { abnormalVitals, readVitals, type VitalSigns } from './vitals.ts';
import type { GeneratedNote, SourceMapEntry, TranscriptSegment } from './types.ts';

export const SECTIONS: readonly Section[] = SOAP_SECTIONS;

export interface DraftSentence {
  readonly text: string;
  /** known span (the local structurer); absent: searched in the transcript */
  readonly char_start?: number;
  readonly char_end?: number;
  readonly confidence?: number;
}

export interface Draft {
  readonly sections: Record<Section, readonly DraftSentence[]>;
  readonly generator: string;
}

export interface PostProcessInput {
  readonly transcript: string;
  readonly segments?: readonly TranscriptSegment[];
  readonly discipline: string;
}

/** Words a faithful restatement may add without adding content. */
const GLUE = new Set(['the', 'a', 'an', 'is', 'was', 'were', 'are', 'and', 'with', 'of', 'to', 'on', 'in', 'at', 'for', 'patient', 'pt', 'has', 'had', 'be', 'been']);

const words = (text: string) => tokenize(text).map((t) => t.norm).filter((w) => w !== '');

export interface Support {
  readonly char_start: number;
  readonly char_end: number;
  /** every content word of the sentence was found in that span */
  readonly supported: boolean;
}

/**
 * The transcript span that best supports a sentence: the window holding the most of its
 * words. Supported only when every word that is not glue, and every number, is in it.
 */
export function findSupport(sentence: string, tokens: readonly Token[], hint?: { readonly start: number; readonly end: number }): Support {
  const want = words(sentence);
  if (want.length === 0) return { char_start: 0, char_end: 0, supported: false };
  const content = want.filter((w) => !GLUE.has(w));
  if (hint) {
    // the span is known (the local structurer): every content word must be in it, as many times
    const bag = new Map<string, number>();
    let first: Token | null = null;
    let last: Token | null = null;
    // tokens are in transcript order: start at the first one inside the hint
    let lo = 0;
    let hi = tokens.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (tokens[mid]!.start < hint.start) lo = mid + 1;
      else hi = mid;
    }
    for (let k = lo; k < tokens.length && tokens[k]!.start < hint.end; k += 1) {
      const t = tokens[k]!;
      if (t.end > hint.end) continue;
      first ??= t;
      last = t;
      bag.set(t.norm, (bag.get(t.norm) ?? 0) + 1);
    }
    if (!first || !last) return { char_start: hint.start, char_end: hint.end, supported: false };
    const supported = content.every((w) => {
      const n = bag.get(w) ?? 0;
      if (n > 0) bag.set(w, n - 1);
      return n > 0;
    });
    return { char_start: first.start, char_end: last.end, supported };
  }
  const wanted = new Set(want);
  const candidates = tokens;
  const maxWindow = want.length * 2 + 8;
  let best = { score: -1, first: 0, last: 0 };
  for (let i = 0; i < candidates.length; i += 1) {
    if (!wanted.has(candidates[i]!.norm)) continue;
    const remaining = new Map<string, number>();
    for (const w of want) remaining.set(w, (remaining.get(w) ?? 0) + 1);
    let score = 0;
    let last = i;
    const limit = Math.min(candidates.length, i + maxWindow);
    for (let j = i; j < limit; j += 1) {
      const n = remaining.get(candidates[j]!.norm) ?? 0;
      if (n > 0) {
        remaining.set(candidates[j]!.norm, n - 1);
        score += GLUE.has(candidates[j]!.norm) ? 0.1 : 1;
        last = j;
      }
    }
    if (score > best.score) best = { score, first: i, last };
  }
  if (best.score < 0) return { char_start: 0, char_end: 0, supported: false };
  const span = candidates.slice(best.first, best.last + 1);
  const bag = new Map<string, number>();
  for (const t of span) bag.set(t.norm, (bag.get(t.norm) ?? 0) + 1);
  const supported = content.every((w) => {
    const n = bag.get(w) ?? 0;
    if (n > 0) bag.set(w, n - 1);
    return n > 0;
  });
  return { char_start: candidates[best.first]!.start, char_end: candidates[best.last]!.end, supported };
}

function audioTime(segments: readonly TranscriptSegment[] | undefined, start: number, end: number): { start_ms?: number; end_ms?: number } {
  if (!segments || segments.length === 0) return {};
  const overlapping = segments.filter((s) => s.char_end > start && s.char_start < end);
  if (overlapping.length === 0) return {};
  return { start_ms: Math.min(...overlapping.map((s) => s.start_ms)), end_ms: Math.max(...overlapping.map((s) => s.end_ms)) };
}

const DOSE = /\b\d+(?:\.\d+)?\s*(?:mg|mcg|milligrams?|micrograms?|units?|ml|milliliters?|cc|tabs?|tablets?|puffs?|l\/min|liters?|meq)\b/i;
const DRUGS =
  /\b(?:insulin|lantus|humalog|novolog|lasix|furosemide|metoprolol|lisinopril|losartan|warfarin|coumadin|eliquis|apixaban|xarelto|rivaroxaban|plavix|clopidogrel|metformin|glipizide|oxycodone|hydrocodone|norco|percocet|tramadol|morphine|gabapentin|prednisone|albuterol|amlodipine|atorvastatin|levothyroxine|aspirin|tylenol|acetaminophen|ibuprofen|motrin|digoxin|potassium|spironolactone|carvedilol|hydralazine|nitroglycerin|heparin|lovenox|enoxaparin|antibiotic|amoxicillin|keflex|cephalexin|cipro|ciprofloxacin|bactrim|diuretic|blood thinner|steroid|opioid|narcotic)\b/i;

export function postProcess(input: PostProcessInput, draft: Draft): GeneratedNote {
  return runSteps(postProcessSteps(input, draft));
}

/** Runs a stepwise computation to its end at once. */
export function runSteps<T>(steps: Generator<unknown, T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

/**
 * Runs a stepwise computation, handing the event loop back whenever a slice of `budgetMs`
 * is used up: the API shares its process with the in-process worker, and a long transcript
 * must not stall other requests.
 */
export async function runStepsPaced<T>(steps: Generator<unknown, T>, signal?: AbortSignal, budgetMs = 4): Promise<T> {
  let sliceStart = performance.now();
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    if (performance.now() - sliceStart >= budgetMs) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      signal?.throwIfAborted();
      sliceStart = performance.now();
    }
  }
}

/** postProcess, one step per sentence. */
export function* postProcessSteps(input: PostProcessInput, draft: Draft): Generator<void, GeneratedNote> {
  const tokens = tokenize(input.transcript);
  yield;
  const generated = {} as Record<Section, string>;
  const sourceMap = {} as Record<Section, SourceMapEntry[]>;
  const confidence = {} as Record<Section, number>;
  const flags: string[] = [];
  const keptBy: Record<Section, string[]> = { subjective: [], objective: [], assessment: [], plan: [] };
  for (const section of SECTIONS) {
    const texts: string[] = [];
    const entries: SourceMapEntry[] = [];
    let confSum = 0;
    let weight = 0;
    for (const s of draft.sections[section]) {
      yield;
      const text = s.text.trim();
      if (text === '') continue;
      const hint = s.char_start !== undefined && s.char_end !== undefined ? { start: s.char_start, end: s.char_end } : undefined;
      const support = findSupport(text, tokens, hint);
      if (!support.supported) {
        flags.push(`Removed, not found in the transcript (${section}): "${text}"`);
        entries.push({ sentence: text, char_start: support.char_start, char_end: support.char_end, unsupported: true });
        continue;
      }
      const c = s.confidence ?? (classifyClause(text, input.discipline).section === section ? 0.9 : 0.6);
      if (c < 0.65) flags.push(`Low confidence that this belongs in ${section}: "${text}"`);
      if (DOSE.test(text) || DRUGS.test(text)) flags.push(`Medication or dose to verify: "${text}"`);
      texts.push(text);
      keptBy[section].push(text);
      entries.push({ sentence: text, char_start: support.char_start, char_end: support.char_end, ...audioTime(input.segments, support.char_start, support.char_end) });
      confSum += c * text.length;
      weight += text.length;
    }
    generated[section] = texts.join(' ');
    sourceMap[section] = entries;
    // an empty section: nothing to be confident about
    confidence[section] = weight === 0 ? 0 : Math.round((confSum / weight) * 100) / 100;
  }
  // readings taken at the visit (objective) win over values the patient reports from home
  const vitals: VitalSigns = {};
  for (const sentence of [...keptBy.objective, ...keptBy.subjective, ...keptBy.assessment, ...keptBy.plan]) {
    yield;
    readVitals(sentence, vitals);
  }
  flags.unshift(...abnormalVitals(vitals));
  const checklist = checklistFor(input.discipline);
  const notMentioned: string[] = [];
  for (const item of checklist?.items ?? []) {
    yield;
    if (!matchChecklist({ ...checklist!, items: [item] }, input.transcript)[item.id]?.matched) notMentioned.push(item.label);
  }
  return {
    generated_soap: generated,
    source_map: sourceMap,
    confidence_summary: confidence,
    verification_flags: flags,
    not_mentioned: notMentioned,
    vital_signs: { ...vitals },
    generator: draft.generator,
  };
}
