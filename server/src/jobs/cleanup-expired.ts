import type { JobHandler } from './job-handler.ts';

/**
 * Hourly: drops records whose only purpose has expired (see README, "What is kept"), deletes
 * the stored objects of deleted audio rows (deleted visits and accounts, queued by a trigger)
 * and expired resumable uploads, and on the embedded database refreshes the planner's
 * statistics.
 */
export const cleanupExpired: JobHandler<'cleanup_expired'> = async (services) => {
  await services.maintenance.purgeExpired();
  await services.audio.purgeDeleted();
  await services.audio.uploads.deleteExpired();
  await services.maintenance.analyzeEmbedded();
};
