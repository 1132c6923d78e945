/**
 * Documentation checklists: a discipline's items, which of them a transcript covers, and
 * prompts for the rest. Nothing is stored on the server; the transcript is the caller's.
 */
import type * as z from 'zod';
import type { checklistItem, matchChecklistBody, matchChecklistResult, suggestionsBody, suggestionsResult } from '@fieldchart/schema/api';
import { ENDPOINTS as E } from '../endpoints.ts';
import type { Invoker } from '../invoke.ts';
import type { ReadOptions } from '../options.ts';

/** One checklist item: a stable `id` (what `checked_items` holds), a label and a prompt. */
export type ChecklistItem = z.output<typeof checklistItem>;
/** Body of `POST /ai/match-checklist`. */
export type MatchChecklistBody = z.input<typeof matchChecklistBody>;
/** `data` of `POST /ai/match-checklist`: `matched_items` keyed by item id, with the evidence span. */
export type MatchChecklistResult = z.output<typeof matchChecklistResult>;
/** Body of `POST /ai/suggestions`. */
export type SuggestionsBody = z.input<typeof suggestionsBody>;
/** `data` of `POST /ai/suggestions`. */
export type SuggestionsResult = z.output<typeof suggestionsResult>;

/** The checklist part of `client.ai`. */
export interface AiChecklistsApi {
  /** `GET /ai/checklist/{discipline}`: case-insensitive; PTA and COTA answer PT's and OT's; unknown → 404. */
  checklist(discipline: string, options?: ReadOptions): Promise<ChecklistItem[]>;
  /** `POST /ai/match-checklist`: unknown discipline or bad input → 422. */
  matchChecklist(body: MatchChecklistBody, options?: ReadOptions): Promise<MatchChecklistResult>;
  /** `POST /ai/suggestions`: prompts for the items not covered, skipping `checked_items`. */
  suggestions(body: SuggestionsBody, options?: ReadOptions): Promise<SuggestionsResult>;
}

export function aiChecklistsApi(call: Invoker): AiChecklistsApi {
  return {
    checklist: (discipline, o) => call.data(E['ai.checklist'], { params: { discipline } }, o),
    matchChecklist: (body, o) => call.data(E['ai.matchChecklist'], { body }, o),
    suggestions: (body, o) => call.data(E['ai.suggestions'], { body }, o),
  };
}
