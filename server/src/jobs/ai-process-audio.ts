import type { JobHandler } from './job-handler.ts';

/**
 * One AI documentation run (services/ai/pipeline/run.ts): safe to run twice; a transient
 * failure is thrown so graphile-worker retries it with backoff, a final one is recorded.
 */
export const aiProcessAudio: JobHandler<'ai_process_audio'> = async (services, payload, run) => {
  await services.aiPipeline.run(payload.transcription_uuid, { attempts: run.attempts, maxAttempts: run.maxAttempts }, run.signal);
};
