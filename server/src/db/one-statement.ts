/**
 * Hot paths that answer in one statement (a read with its children as JSON and its audit row
 * in a data-modifying CTE): the SQL runs through drizzle's own prepared-query path, so on
 * PostgreSQL postgres.js keeps it as a named statement per connection — parsed and planned
 * once, no describe round trip — and inside a unit of work it runs on the ambient transaction
 * like any other query. Rows come back as JSON and are mapped to drizzle's row types by the
 * table's own column decoders.
 */
import { getTableColumns, type SQL } from 'drizzle-orm';
import { PgDialect, type PgTable } from 'drizzle-orm/pg-core';
import { rowsOf, type Db } from './database.ts';

const dialect = new PgDialect();

/** Runs `query` as a prepared statement on `db` (the pool or the ambient transaction) and answers its rows. */
export async function runPrepared<T>(db: Db, name: string, query: SQL): Promise<T[]> {
  const prepared = db._.session.prepareQuery(dialect.sqlToQuery(query), undefined, name, false);
  return rowsOf<T>(await prepared.execute());
}

/** A row that `to_json(row)` produced, decoded as drizzle decodes the table's columns. */
export function rowFromJson<T extends PgTable>(table: T, json: Record<string, unknown>): T['$inferSelect'] {
  const out: Record<string, unknown> = {};
  for (const [key, column] of Object.entries(getTableColumns(table))) {
    const value = json[column.name];
    out[key] = value === null || value === undefined ? null : column.mapFromDriverValue(value);
  }
  return out as T['$inferSelect'];
}
