/**
 * graphile-worker 0.17 records a job's success or failure (`completeJob` / `failJob`) through
 * its `withRetries`, which retries only serialization failures, 57P03 and two errnos, and
 * does not await the result: any other error while the database is away (ECONNREFUSED while
 * PostgreSQL is stopped, 57P01 as it shuts down, ECONNRESET) becomes an unhandled rejection
 * — which ends a Node process — and leaves the job locked by a live worker for four hours
 * (the liveness sweep frees only dead nodes' jobs). Seen in test/server/postgres-restart.test.ts.
 *
 * Its retry table is a plain object read on every error, so adding the codes of "the database
 * is away" makes those writes wait for the database instead (backing off to 30 s, 100 tries).
 */
import { RETRYABLE_ERROR_CODES } from 'graphile-worker/dist/lib.js';

const AWAY = { minDelay: 500, maxDelay: 30_000 };
/** Errnos of a refused or dropped connection, and PostgreSQL's admin_shutdown / crash_shutdown. */
const CODES = ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENETUNREACH', '57P01', '57P02'] as const;

/** Called before a worker starts; a code already in the table keeps its entry (so a second call changes nothing). */
export function retryJobQueueWritesWhileDatabaseAway(): void {
  const table = RETRYABLE_ERROR_CODES as Record<string, { minDelay: number; maxDelay: number } | undefined>;
  for (const code of CODES) table[code] ??= AWAY;
}
