import { sql } from 'drizzle-orm';
import { check, index, integer, jsonb, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { users } from './accounts.ts';
import { visits } from './clinical.ts';
import { createdAt, ts, updatedAt } from './columns.ts';
import { syncColumns } from './sync-columns.ts';

/** The states of the AI pipeline (clinician-api.md, AI pipeline status). */
export const AI_STATUSES = ['processing', 'completed', 'failed'] as const;
export type AiStatus = (typeof AI_STATUSES)[number];

/**
 * One AI documentation run: an uploaded recording of a visit, transcribed and turned into a
 * SOAP draft by the `ai_process_audio` job (server/src/services/ai/pipeline). Synced to the
 * owner's devices as the `ai_status` rows of the change feed, hence the sync columns and the
 * row-version/notify triggers of the custom migration `ai_transcriptions_sync`.
 *
 * Everything derived from the recording is PHI (`_enc`, sealed with the key ring and bound to
 * `ai_transcriptions.<column>:<id>`); the numbers (confidence per section) and the checklist
 * item ids of `not_mentioned` are not, and `error_message` is written by the server from a
 * fixed vocabulary, never from provider output.
 */
export const aiTranscriptions = pgTable(
  'ai_transcriptions',
  {
    id: uuid('id').primaryKey(),
    ownerId: uuid('owner_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    visitId: uuid('visit_id')
      .notNull()
      .references(() => visits.id, { onDelete: 'cascade' }),
    /** The stored recording (services.audio); no foreign key so the audio store stays swappable. */
    audioId: uuid('audio_id').notNull(),
    discipline: text('discipline').notNull(),
    encounterType: text('encounter_type').notNull(),
    status: text('status', { enum: AI_STATUSES }).notNull().default('processing'),
    rawTranscriptEnc: text('raw_transcript_enc'),
    /** JSON of the engine's timed segments. */
    segmentsEnc: text('segments_enc'),
    /** JSON of the four generated sections. */
    generatedSoapEnc: text('generated_soap_enc'),
    /** JSON of the source map (quotes transcript sentences). */
    sourceMapEnc: text('source_map_enc'),
    /** JSON array (flags can name medications and values). */
    verificationFlagsEnc: text('verification_flags_enc'),
    /** JSON of the extracted vital signs. */
    vitalSignsEnc: text('vital_signs_enc'),
    confidenceSummary: jsonb('confidence_summary').$type<Record<string, number>>(),
    notMentioned: text('not_mentioned').array(),
    /** A clinician-facing sentence chosen by the server (no provider text, no PHI). */
    errorMessage: text('error_message'),
    errorCode: text('error_code'),
    /** Job runs started for the current request (reset by /ai/retry). */
    attempts: integer('attempts').notNull().default(0),
    audioDurationMs: integer('audio_duration_ms'),
    sttEngine: text('stt_engine'),
    generator: text('generator'),
    startedAt: ts('started_at'),
    finishedAt: ts('finished_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    ...syncColumns(),
  },
  (t) => [
    check('ai_transcriptions_status_check', sql`${t.status} in ('processing', 'completed', 'failed')`),
    index('ai_transcriptions_owner_txid_idx').on(t.ownerId, t.txid),
    index('ai_transcriptions_visit_idx').on(t.visitId),
    index('ai_transcriptions_owner_created_idx').on(t.ownerId, t.createdAt),
  ],
);

/**
 * Liveness of job-queue workers on PostgreSQL: each worker process holds a session advisory
 * lock on its id's key for as long as it lives and records its graphile worker id here. At
 * start-up (and periodically) a node releases the graphile-worker locks of workers whose
 * advisory lock nobody holds any more — they died (kill -9, lost host) — while workers of
 * other live nodes keep theirs. See server/src/jobs/worker-liveness.ts.
 */
export const jobWorkers = pgTable('job_workers', {
  workerId: text('worker_id').primaryKey(),
  /** pg_try_advisory_lock key held by the worker's session. */
  lockKey: integer('lock_key').notNull(),
  startedAt: createdAt(),
});
