import * as z from 'zod';
import { isoDateTime, pathId, text } from './common.ts';

/**
 * The AI pipeline's contract (clinician-api.md, AI documentation; CONTRACT.md, AI retry):
 * the text fields of POST /ai/process-audio and the status record that GET /ai/status and the
 * `ai_status` rows of the sync feed carry.
 */

/** Disciplines the pipeline documents (the checklists' disciplines; PTA and COTA share theirs). */
export const AI_DISCIPLINES = ['PT', 'PTA', 'OT', 'COTA', 'SLP', 'RN'] as const;
/** Kinds of home-health visit note a dictation becomes; the spec names 'daily_note'. */
export const ENCOUNTER_TYPES = ['daily_note', 'evaluation', 'reassessment', 'progress_note', 'discharge', 'supervisory'] as const;

export const aiDiscipline = text(20)
  .transform((v) => v.toUpperCase())
  .pipe(z.enum(AI_DISCIPLINES, { error: `must be one of ${AI_DISCIPLINES.join(', ')}` }));
export const encounterType = z.enum(ENCOUNTER_TYPES, { error: `must be one of ${ENCOUNTER_TYPES.join(', ')}` });

/** The text fields of POST /ai/process-audio (the file part is `audio`, or `upload_id` names a finished resumable upload). */
export const processAudioFields = z.object({
  schedule_uuid: z.uuid('must be a visit uuid'),
  discipline: aiDiscipline,
  encounter_type: encounterType,
  upload_id: text(200).min(1, 'is required').optional(),
});
export type ProcessAudioFields = z.infer<typeof processAudioFields>;

export const processAudioResult = z.object({ transcription_uuid: z.string() });

export const transcriptionUuidParams = z.object({ serverUuid: pathId });

export const AI_STATUS_VALUES = ['processing', 'completed', 'failed'] as const;

const soapSections = z.object({ subjective: z.string(), objective: z.string(), assessment: z.string(), plan: z.string() });
const sourceMapEntry = z
  .object({
    sentence: z.string(),
    char_start: z.number().int(),
    char_end: z.number().int(),
    start_ms: z.number().optional(),
    end_ms: z.number().optional(),
    unsupported: z.boolean().optional(),
  })
  .loose();

/** The AI pipeline status fields; the spec's fields are null until the run produces them. */
export const aiStatus = z.object({
  uuid: z.string(),
  transcription_uuid: z.string(),
  schedule_uuid: z.string(),
  discipline: z.string(),
  encounter_type: z.string(),
  status: z.enum(AI_STATUS_VALUES),
  raw_transcript: z.string().nullable(),
  generated_soap: soapSections.nullable(),
  verification_flags: z.array(z.string()).nullable(),
  confidence_summary: z.record(z.string(), z.number()).nullable(),
  source_map: z.record(z.string(), z.array(sourceMapEntry)).nullable(),
  not_mentioned: z.array(z.string()).nullable(),
  vital_signs: z.record(z.string(), z.unknown()).nullable(),
  error_message: z.string().nullable(),
  error_code: z.string().nullable(),
  attempts: z.number().int(),
  stt_engine: z.string().nullable(),
  generator: z.string().nullable(),
  audio_duration_ms: z.number().int().nullable(),
  created_at: isoDateTime,
  updated_at: isoDateTime,
  finished_at: isoDateTime.nullable(),
});
export type AiStatusRecord = z.infer<typeof aiStatus>;
