/**
 * Hot paths that answer in one statement (a read with its children as JSON and its audit row
 * in a data-modifying CTE): the SQL runs through drizzle's own prepared-query path, so on
 * PostgreSQL postgres.js keeps it as a named statement per connection — parsed and planned
 * once, no describe round trip — and inside a unit of work it runs on the ambient transaction
 * like any other query. Rows come back as JSON and are mapped to drizzle's row types by the
 * table's own column decoders.
 */
import { fillPlaceholders, getTableColumns, sql, type SQL } from 'drizzle-orm';
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

/** A uuid, a date (YYYY-MM-DD) or a snapshot (xmin:xmax:xip,…): nothing to quote. */
const INLINE_SAFE = /^[0-9A-Za-z:,-]*$/;

/**
 * A drizzle prepared query on a one-session database (PGlite), which parses and plans every
 * extended-protocol statement again: an SQL-level `PREPARE` (once per session), run by
 * `EXECUTE`. EXECUTE takes no bind parameters, only literals, so every value must be of a
 * closed form — a uuid, a date or a snapshot, validated where it came in — and anything else
 * is refused rather than quoted.
 */
export function sessionPrepared<R>(db: Db, name: string, query: { readonly sql: string; readonly params: readonly unknown[] }) {
  let prepared: Promise<void> | null = null;
  return async (values: Record<string, unknown>): Promise<R[]> => {
    if (!prepared) {
      prepared = db.execute(sql.raw(`prepare ${name} as ${query.sql}`)).then(() => {});
      prepared.catch(() => (prepared = null));
    }
    await prepared;
    const args = fillPlaceholders([...query.params], values).map((v) => {
      if (typeof v !== 'string' || !INLINE_SAFE.test(v)) throw new Error(`${name}: a parameter of an unexpected form`);
      return `'${v}'`;
    });
    return rowsOf<R>(await db.execute(sql.raw(`execute ${name}(${args.join(', ')})`)));
  };
}
