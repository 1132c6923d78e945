import { sql } from 'drizzle-orm';
import type { Db } from '../db/database.ts';
import type { TaskName, TaskPayload } from './task-map.ts';

/**
 * Enqueues on the caller's transaction (or connection) through graphile_worker.add_job, so
 * the job exists exactly when the transaction that asked for it commits. (Calling the
 * worker's own pool from inside an app transaction would deadlock on PGlite.)
 */
export async function enqueue<T extends TaskName>(
  db: Db,
  task: T,
  payload: TaskPayload<T>,
  opts: { maxAttempts?: number; jobKey?: string; runAt?: Date } = {},
): Promise<void> {
  await db.execute(
    sql`select graphile_worker.add_job(${task}, ${JSON.stringify(payload)}::json, max_attempts => ${opts.maxAttempts ?? 12}, job_key => ${opts.jobKey ?? null}::text, run_at => ${opts.runAt?.toISOString() ?? null}::timestamptz)`,
  );
}
