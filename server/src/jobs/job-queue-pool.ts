import type { FastifyBaseLogger } from 'fastify';
import pg from 'pg';
import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import { applyMigrations } from '../db/migrate.ts';
import { PglitePgPool } from '../db/pglite-pg-pool.ts';
import { migrateJobQueue } from './worker.ts';

/**
 * The `pg.Pool` graphile-worker runs on: a real pool on PostgreSQL, the in-process adapter on
 * the embedded database (never a second opener of the directory; see pglite-pg-pool.ts).
 */
export function openJobQueuePool(config: Config, database: Database, max: number): pg.Pool {
  if (database.pglite) return silentOnceEnded(new PglitePgPool(database.pglite, { max }).asPgPool());
  if (config.database.kind === 'postgres') return silentOnceEnded(new pg.Pool({ connectionString: config.database.url, max }));
  throw new Error('database and config disagree on the database kind');
}

/**
 * A pool that, once ended, answers no connection at all rather than refusing one.
 *
 * graphile-worker records a job's completion without awaiting it, retrying while the database
 * is away (retry-connection-errors.ts). A node shut down during such a wait ends this pool
 * under the retry, whose next try failed with "Cannot use a pool after calling end on the pool"
 * as an unhandled rejection (seen in postgres-restart.test.ts). The try now waits for good and
 * holds no timer: the process exits, and the job, still locked by a worker that is gone, is
 * released by the liveness sweep and runs again (every task is safe to run twice).
 */
function silentOnceEnded(pool: pg.Pool): pg.Pool {
  let ended = false;
  const connect = pool.connect.bind(pool) as (callback?: (...args: unknown[]) => void) => Promise<pg.PoolClient> | undefined;
  const end = pool.end.bind(pool);
  Object.assign(pool, {
    connect(callback?: (...args: unknown[]) => void) {
      if (ended) return callback ? undefined : new Promise<never>(() => {});
      return connect(callback);
    },
    end() {
      ended = true;
      return end();
    },
  });
  return pool;
}

/**
 * Readies a job-queue pool: graphile-worker insists on error handlers on the pool and on each
 * client, so `onError` (by default: ignore, and a failure surfaces as the rejection of whatever
 * ran) goes on both; then graphile-worker's migrations run on it.
 */
export async function prepareJobQueue(
  pool: pg.Pool,
  opts: { onError?: (err: Error) => void; log?: FastifyBaseLogger } = {},
): Promise<void> {
  const onError = opts.onError ?? (() => {});
  pool.on('error', onError);
  pool.on('connect', (client: pg.PoolClient) => client.on('error', onError));
  await migrateJobQueue(pool, opts.log);
}

/**
 * Everything a process that does not run the worker (the CLI) applies before it works on a
 * database: the drizzle migrations, then graphile-worker's (services enqueue jobs with
 * `graphile_worker.add_job`), the latter on a pool that lives only for the call.
 */
export async function migrateDatabase(config: Config, database: Database): Promise<void> {
  await applyMigrations(database);
  const pool = openJobQueuePool(config, database, 2);
  try {
    await prepareJobQueue(pool);
  } finally {
    await pool.end();
  }
}
