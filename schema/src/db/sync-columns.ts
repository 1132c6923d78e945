import { sql } from 'drizzle-orm';
import { bigint, pgSequence, timestamp } from 'drizzle-orm/pg-core';

/**
 * Every row a device syncs carries `row_version`, drawn from this one sequence on insert and
 * bumped on every update by a trigger (migration 0002), and is soft-deleted (`deleted_at`) so
 * the change feed can send the tombstone.
 */
export const syncRowVersion = pgSequence('sync_row_version', { startWith: 1, increment: 1 });

export const syncColumns = () => ({
  rowVersion: bigint('row_version', { mode: 'number' }).notNull().default(sql`nextval('sync_row_version')`),
  deletedAt: timestamp('deleted_at', { withTimezone: true, mode: 'date' }),
});
