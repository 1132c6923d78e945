import * as z from 'zod';
import { MAX_PATH_PARAM, safeString, text } from './common.ts';

/**
 * Checklist endpoints: GET /ai/checklist/{discipline}, POST /ai/match-checklist,
 * POST /ai/suggestions. Transcripts are PHI: validation messages never echo them.
 */

/** A transcript as the app sends it; 200 000 characters is over an hour of dictation. */
const transcript = text(200_000).min(1, 'is required');
const discipline = text(20).min(1, 'is required');

export const checklistDisciplineParams = z.object({ discipline: z.string().max(MAX_PATH_PARAM) });

export const checklistItem = z
  .object({
    id: z.string().meta({ description: 'stable id, the value clients put in checked_items' }),
    label: z.string(),
    prompt: z.string().meta({ description: 'the question asked when the transcript does not cover the item' }),
  })
  .meta({ id: 'ChecklistItem' });

export const matchChecklistBody = z.object({ transcript, discipline });

export const checklistEvidence = z.object({ char_start: z.number().int(), char_end: z.number().int(), text: z.string() });

export const matchChecklistResult = z.object({
  discipline: z.string().meta({ description: 'the checklist used (PTA → PT, COTA → OT)' }),
  version: z.string(),
  matched_items: z.record(z.string(), z.object({ matched: z.boolean(), evidence: checklistEvidence.nullable() })),
});

export const suggestionsBody = z.object({
  transcript,
  discipline,
  checked_items: z.array(safeString(100)).max(200),
});

export const suggestionsResult = z.object({ suggestions: z.array(z.string()) });
