import { sql } from 'drizzle-orm';
import { bigint, customType, pgSequence, timestamp } from 'drizzle-orm/pg-core';

/**
 * Every row a device syncs carries `row_version`, drawn from this one sequence on insert and
 * bumped on every update by a trigger (migration 0002), and is soft-deleted (`deleted_at`) so
 * the change feed can send the tombstone.
 */
export const syncRowVersion = pgSequence('sync_row_version', { startWith: 1, increment: 1 });

/**
 * PostgreSQL's 64-bit transaction id. Read as text: the feed only hands it back to
 * `pg_visible_in_snapshot`, never does arithmetic on it in JavaScript.
 */
export const xid8 = customType<{ data: string; driverData: string }>({ dataType: () => 'xid8' });

export const syncColumns = () => ({
  rowVersion: bigint('row_version', { mode: 'number' }).notNull().default(sql`nextval('sync_row_version')`),
  deletedAt: timestamp('deleted_at', { withTimezone: true, mode: 'date' }),
  /**
   * The transaction that last wrote the row (set on insert by default, on update by the
   * row-version trigger). The change feed's cursor is a snapshot; a row is new to a device
   * when this transaction was not visible in the device's snapshot (docs/sync-protocol.md).
   */
  txid: xid8('txid').notNull().default(sql`pg_current_xact_id()`),
});
