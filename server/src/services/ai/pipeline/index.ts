/**
 * The AI documentation pipeline (issue 10): a recording of a visit becomes a transcript and a
 * traceable SOAP draft, asynchronously, on Graphile Worker.
 *
 * - `begin` records the run `processing` and enqueues `ai_process_audio` in ONE transaction
 *   (the job exists exactly when the row does). The recording itself is stored before, by
 *   services.audio, in its own short transaction: streaming 100 MB inside a transaction would
 *   hold the embedded database (which serialises all work) for the whole upload.
 * - `run` is the job body (pipeline/run.ts): idempotent — it only ever moves a row out of
 *   `processing`, with a conditional update, so a second run after a crash finds nothing to do.
 * - `retry` moves a `failed` run back to `processing` and enqueues again, in one transaction.
 */
import { and, eq, isNull } from 'drizzle-orm';
import { aiTranscriptions } from '@fieldchart/schema/db';
import type { AiStatusRecord } from '@fieldchart/schema/api';
import type { Db } from '../../../db/database.ts';
import { Conflict, NotFound } from '../../../errors.ts';
import { enqueue } from '../../../jobs/enqueue.ts';
import type { AuditContext } from '../../audit/audit-log.ts';
import { findOwnedVisit } from '../../visits/visit-records.ts';
import type { AiPipelineDeps } from './deps.ts';
import { statusRecordOf } from './records.ts';
import { createRunner, type JobAttempt } from './run.ts';
import { isUuid } from '../../ids.ts';

export type { AiPipelineDeps, FinishedEvent, OnFinished, PipelineAudio, PipelineMedia, PipelineNotes } from './deps.ts';
export { statusRecordOf, type TranscriptionRow } from './records.ts';
export type { JobAttempt, RunOutcome } from './run.ts';

export const AI_JOB = 'ai_process_audio';
/** One queued job per run: a retry or a duplicate enqueue replaces instead of adding. */
export const jobKeyOf = (transcriptionId: string) => `${AI_JOB}:${transcriptionId}`;

const notFound = () => new NotFound('Transcription not found', 'transcription_not_found');

export function createAiPipeline(deps: AiPipelineDeps) {
  const { db, clock, phi, audit } = deps;
  const maxAttempts = deps.config.pipeline.maxAttempts;
  const runner = createRunner(deps);

  async function findOwned(tx: Db, userId: string, id: string, opts: { forUpdate?: boolean } = {}) {
    if (!isUuid(id)) throw notFound();
    const q = tx
      .select()
      .from(aiTranscriptions)
      .where(and(eq(aiTranscriptions.id, id), eq(aiTranscriptions.ownerId, userId), isNull(aiTranscriptions.deletedAt)));
    const [row] = opts.forUpdate ? await q.for('update') : await q;
    if (!row) throw notFound();
    return row;
  }

  return {
    /** The visit must be the caller's (404 otherwise): checked before any byte is stored. */
    async assertVisit(userId: string, visitId: string): Promise<void> {
      await findOwnedVisit(db, userId, visitId);
    },

    /**
     * Records the stored audio (`commitAudio`, services.audio.commit on this transaction), the
     * run `processing` and its job, in one transaction: all three exist, or none.
     */
    async begin(
      ctx: AuditContext,
      userId: string,
      input: { visitId: string; discipline: string; encounterType: string },
      commitAudio: (tx: Db) => Promise<{ readonly uuid: string }>,
    ): Promise<{ transcription_uuid: string }> {
      const id = crypto.randomUUID();
      return audit.around(ctx, { action: 'create', resourceType: 'ai_transcription', resourceId: id }, async (tx, note) => {
        const visit = await findOwnedVisit(tx, userId, input.visitId);
        const audio = await commitAudio(tx);
        note({ details: { visit_id: visit.id, audio_id: audio.uuid } });
        const now = clock.now();
        await tx.insert(aiTranscriptions).values({
          id,
          ownerId: userId,
          visitId: visit.id,
          audioId: audio.uuid,
          discipline: input.discipline,
          encounterType: input.encounterType,
          status: 'processing',
          createdAt: now,
          updatedAt: now,
        });
        await enqueue(tx, AI_JOB, { transcription_uuid: id }, { maxAttempts, jobKey: jobKeyOf(id) });
        return { transcription_uuid: id };
      });
    },

    async status(ctx: AuditContext, userId: string, id: string): Promise<AiStatusRecord> {
      return audit.around(ctx, { action: 'read', resourceType: 'ai_transcription', resourceId: isUuid(id) ? id : null }, async (tx) =>
        statusRecordOf(phi, await findOwned(tx, userId, id)),
      );
    },

    /** Only from `failed` (409 otherwise): back to `processing`, re-enqueued in the same transaction. */
    async retry(ctx: AuditContext, userId: string, id: string): Promise<void> {
      await audit.around(ctx, { action: 'update', resourceType: 'ai_transcription', resourceId: isUuid(id) ? id : null, details: { op: 'retry' } }, async (tx) => {
        const row = await findOwned(tx, userId, id, { forUpdate: true });
        if (row.status !== 'failed') throw new Conflict('The AI pipeline is not in the failed state', 'pipeline_not_failed');
        await tx
          .update(aiTranscriptions)
          .set({ status: 'processing', errorMessage: null, errorCode: null, attempts: 0, startedAt: null, finishedAt: null, updatedAt: clock.now() })
          .where(eq(aiTranscriptions.id, row.id));
        await enqueue(tx, AI_JOB, { transcription_uuid: row.id }, { maxAttempts, jobKey: jobKeyOf(row.id) });
      });
    },

    /** The job body; see run.ts. */
    run: (transcriptionId: string, attempt: JobAttempt, signal?: AbortSignal) => runner.run(transcriptionId, attempt, signal),
  };
}

export type AiPipeline = ReturnType<typeof createAiPipeline>;
