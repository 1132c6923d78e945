import * as z from 'zod';

/**
 * Checklist endpoints: GET /ai/checklist/{discipline}, POST /ai/match-checklist,
 * POST /ai/suggestions. Transcripts are PHI: validation messages never echo them.
 */

/** A transcript as the app sends it; 200 000 characters is over an hour of dictation. */
const transcript = z.string().trim().min(1, 'is required').max(200_000, 'must be at most 200000 characters');
const discipline = z.string().trim().min(1, 'is required').max(20, 'must be at most 20 characters');

export const checklistDisciplineParams = z.object({ discipline: z.string().min(1).max(20) });

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
  checked_items: z.array(z.string().max(100)).max(200),
});

export const suggestionsResult = z.object({ suggestions: z.array(z.string()) });
