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
  if (database.pglite) return new PglitePgPool(database.pglite, { max }).asPgPool();
  if (config.database.kind === 'postgres') return new pg.Pool({ connectionString: config.database.url, max });
  throw new Error('database and config disagree on the database kind');
}

/**
 * Everything a process that does not run the worker (the CLI) applies before it works on a
 * database: the drizzle migrations, then graphile-worker's (services enqueue jobs with
 * `graphile_worker.add_job`), the latter on a pool that lives only for the call.
 */
export async function migrateDatabase(config: Config, database: Database): Promise<void> {
  await applyMigrations(database);
  const pool = openJobQueuePool(config, database, 2);
  // graphile-worker insists on error handlers on the pool and each client; a failure here
  // surfaces as the migration's own rejection.
  pool.on('error', () => {});
  pool.on('connect', (client: pg.PoolClient) => client.on('error', () => {}));
  try {
    await migrateJobQueue(pool);
  } finally {
    await pool.end();
  }
}
