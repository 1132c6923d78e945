import type { JobHandler } from './worker.ts';

/**
 * Hourly: drops records whose only purpose has expired (see README, "What is kept"), and on
 * the embedded database refreshes the planner's statistics.
 */
export const cleanupExpired: JobHandler<'cleanup_expired'> = async (services) => {
  await services.maintenance.purgeExpired();
  await services.maintenance.analyzeEmbedded();
};
