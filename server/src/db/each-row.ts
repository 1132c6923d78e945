/**
 * A big read handed over row by row. On PostgreSQL the rows are taken off the wire as they
 * arrive (postgres.js `forEach`), so the caller's work on the first rows overlaps the
 * database's work on the rest instead of following it; PGlite answers a statement whole, and
 * there the rows are handed over once it has.
 */
import { is, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { PostgresJsSession } from 'drizzle-orm/postgres-js';
import type postgres from 'postgres';
import { rowsOf, type Db } from './database.ts';

const dialect = new PgDialect();

/**
 * Runs `query` on `db` (the pool or a transaction) and calls `onRow` with each row, in order.
 * If `onRow` throws, no later row is handed over, and the error is thrown once the statement
 * has ended (the connection is left between statements, as any query leaves it).
 */
export async function eachRow<T>(db: Db, query: SQL, onRow: (row: T) => void): Promise<void> {
  const session: unknown = db._.session;
  if (is(session, PostgresJsSession)) {
    const { sql: text, params } = dialect.sqlToQuery(query);
    const client = (session as unknown as { client: postgres.Sql }).client;
    let failed: { readonly err: unknown } | null = null;
    await client.unsafe(text, params as postgres.ParameterOrJSON<never>[]).forEach((row) => {
      if (failed) return;
      try {
        onRow(row as T);
      } catch (err) {
        failed = { err };
      }
    });
    if (failed) throw (failed as { readonly err: unknown }).err;
    return;
  }
  for (const row of rowsOf<T>(await db.execute(query))) onRow(row);
}
