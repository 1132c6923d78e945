import type { Checklist, ChecklistItem, ChecklistMatch } from './types.ts';

const compiled = new WeakMap<ChecklistItem, readonly RegExp[]>();

function cuesOf(item: ChecklistItem): readonly RegExp[] {
  let res = compiled.get(item);
  if (!res) {
    res = item.cues.map((c) => new RegExp(c, 'i'));
    compiled.set(item, res);
  }
  return res;
}

/**
 * The sentence around a match: evidence a clinician can read, not just the cue word.
 * Sentence ends are punctuation or line breaks; run-on speech without punctuation is capped
 * at 160 characters either side of the cue.
 */
function sentenceAround(transcript: string, start: number, end: number): { char_start: number; char_end: number; text: string } {
  const CAP = 160;
  let s = start;
  while (s > 0 && start - s < CAP && !/[.!?\n]/.test(transcript[s - 1]!)) s -= 1;
  let e = end;
  while (e < transcript.length && e - end < CAP && !/[.!?\n]/.test(transcript[e]!)) e += 1;
  // the sentence's own full stop belongs to it
  if (e < transcript.length && /[.!?]/.test(transcript[e]!)) e += 1;
  while (s < e && /\s/.test(transcript[s]!)) s += 1;
  while (e > s && /\s/.test(transcript[e - 1]!)) e -= 1;
  return { char_start: s, char_end: e, text: transcript.slice(s, e) };
}

/**
 * Each checklist item matched or not, with the transcript span that shows it: the sentence
 * holding the earliest cue. Keyed by item id, in checklist order.
 */
export function matchChecklist(checklist: Checklist, transcript: string): Record<string, ChecklistMatch> {
  const out: Record<string, ChecklistMatch> = {};
  for (const item of checklist.items) {
    let best: RegExpExecArray | null = null;
    for (const re of cuesOf(item)) {
      const m = re.exec(transcript);
      if (m && (!best || m.index < best.index)) best = m;
    }
    out[item.id] = best
      ? { matched: true, evidence: sentenceAround(transcript, best.index, best.index + best[0].length) }
      : { matched: false, evidence: null };
  }
  return out;
}

/** Prompts for the items the transcript does not cover, skipping those the clinician already checked. */
export function suggestionsFor(checklist: Checklist, transcript: string, checkedItems: readonly string[]): string[] {
  const checked = new Set(checkedItems);
  const matches = matchChecklist(checklist, transcript);
  return checklist.items.filter((i) => !checked.has(i.id) && !matches[i.id]?.matched).map((i) => i.prompt);
}
