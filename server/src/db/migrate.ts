import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import type { PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import type { PgliteDatabase } from 'drizzle-orm/pglite';
import { sql as q } from 'drizzle-orm';
import { rowsOf, type Database } from './database.ts';

/**
 * dist/migrations from a build (this code bundled into dist/<program>/), server/migrations
 * from the sources (server/src/db): whichever holds the journal.
 */
export const migrationsFolder = ((here: string) => {
  const candidates = [path.resolve(here, '../migrations'), path.resolve(here, '../../migrations')];
  return candidates.find((dir) => fs.existsSync(path.join(dir, 'meta/_journal.json'))) ?? candidates[1]!;
})(path.dirname(fileURLToPath(import.meta.url)));

// Any constant works; it only has to be the same on every node.
const MIGRATION_LOCK_ID = 7_414_201;

/**
 * Applies the committed drizzle migrations; idempotent on both databases. On PostgreSQL
 * several nodes may boot at once, so each run waits for a session advisory lock.
 */
export async function applyMigrations(database: Database): Promise<void> {
  if (database.kind === 'pglite') {
    await migratePglite(database.db as unknown as PgliteDatabase, { migrationsFolder });
    return;
  }
  const sql = database.sql;
  if (!sql) throw new Error('postgres database without a client');
  // The lock lives on its own connection; it serialises nodes, the migration itself uses the pool.
  const reserved = await sql.reserve();
  try {
    await reserved`select pg_advisory_lock(${MIGRATION_LOCK_ID})`;
    try {
      await migratePostgres(database.db as unknown as PostgresJsDatabase, { migrationsFolder });
    } finally {
      await reserved`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`;
    }
  } finally {
    reserved.release();
  }
}

export interface MigrationStatus {
  /** drizzle migrations applied (server/migrations). */
  readonly applied: number;
  /** graphile-worker migrations applied (its own schema). */
  readonly job_queue: number;
}

/** How far the database is migrated; tables that do not exist yet count as nothing applied. */
export async function migrationStatus(database: Database): Promise<MigrationStatus> {
  const count = async (table: string): Promise<number> => {
    const present = rowsOf<{ present: boolean }>(await database.db.execute(q`select to_regclass(${table}) is not null as present`));
    if (!present[0]?.present) return 0;
    const rows = rowsOf<{ n: number }>(await database.db.execute(q`select count(*)::int as n from ${q.raw(table)}`));
    return Number(rows[0]?.n ?? 0);
  };
  return { applied: await count('drizzle.__drizzle_migrations'), job_queue: await count('graphile_worker.migrations') };
}
