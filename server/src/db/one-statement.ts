/**
 * Hot paths that answer in one statement (a read with its children as JSON and its audit row
 * in a data-modifying CTE): the SQL runs as a statement parsed and planned once per database
 * session. On PostgreSQL that is drizzle's own prepared-query path (postgres.js keeps it as a
 * named statement per connection, no describe round trip), and inside a unit of work it runs
 * on the ambient transaction like any other query. PGlite parses and plans every
 * extended-protocol statement again, so there the statement is prepared in SQL (`PREPARE`)
 * once per session and run by `EXECUTE`, on one generic plan. Rows come back as JSON and are
 * mapped to drizzle's row types by the table's own column decoders.
 */
import { createHash } from 'node:crypto';
import { fillPlaceholders, getTableColumns, is, Placeholder, sql, type SQL } from 'drizzle-orm';
import { PgDialect, type PgTable } from 'drizzle-orm/pg-core';
import { types, type QueryOptions } from '@electric-sql/pglite';
import { PgliteSession } from 'drizzle-orm/pglite';
import pg from 'pg';
import { rowsOf, sqlState, type Db } from './database.ts';
import { prepareValue } from './pg-wire-values.ts';

const dialect = new PgDialect();

/**
 * A parameter as an SQL literal for `EXECUTE`, which takes no bind parameters: the text `pg`
 * would send for it (its own encoder), quoted by `pg`'s own `escapeLiteral`; bytes as a bytea
 * hex literal. The literal is coerced to the type PREPARE inferred for the parameter, as a
 * bound text value would be.
 */
function literalOf(value: unknown): string {
  const text = prepareValue(value);
  if (text === null) return 'NULL';
  return pg.escapeLiteral(typeof text === 'string' ? text : `\\x${text.toString('hex')}`);
}

/** `EXECUTE statement(…)` with each value as a literal. */
export const executeText = (statement: string, params: readonly unknown[]) =>
  params.length === 0 ? `execute ${statement}` : `execute ${statement}(${params.map(literalOf).join(', ')})`;

const DUPLICATE_PREPARED_STATEMENT = '42P05';

/** Statements PREPAREd per PGlite session (the instance), by SQL text. Bounded: past it, statements run unprepared. */
const sessionStatements = new WeakMap<object, Map<string, Promise<string>>>();
const MAX_SESSION_STATEMENTS = 256;

/**
 * The PGlite instance `db` runs on when it is the database itself, outside a transaction;
 * null on PostgreSQL and inside a transaction (PGlite's transaction object does not name its
 * database, and the statement runs as drizzle prepares it there).
 */
function pgliteSessionOf(db: Db): object | null {
  const session: unknown = db._.session;
  if (!is(session, PgliteSession)) return null;
  const client: unknown = (session as unknown as { client: unknown }).client;
  return typeof client === 'object' && client !== null && 'transaction' in client ? client : null;
}

function statementOn(db: Db, session: object, text: string): Promise<string> | null {
  let statements = sessionStatements.get(session);
  if (!statements) sessionStatements.set(session, (statements = new Map()));
  const known = statements.get(text);
  if (known) return known;
  if (statements.size >= MAX_SESSION_STATEMENTS) return null;
  // Named by its text, so a session asked twice for one statement (through another handle on
  // the same client) finds it prepared already under the same name.
  const name = `fieldchart_s${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
  const prepared = db
    .execute(sql.raw(`prepare ${name} as ${text}`))
    .catch((err: unknown) => {
      if (sqlState(err) !== DUPLICATE_PREPARED_STATEMENT) throw err;
    })
    .then(() => name);
  statements.set(text, prepared);
  // A failed PREPARE (the database closing) is tried again by the next call.
  prepared.catch(() => statements.delete(text));
  return prepared;
}

/** Runs `query` as a prepared statement on `db` (the pool or the ambient transaction) and answers its rows. */
export async function runPrepared<T>(db: Db, name: string, query: SQL): Promise<T[]> {
  const built = dialect.sqlToQuery(query);
  const session = pgliteSessionOf(db);
  const statement = session ? statementOn(db, session, built.sql) : null;
  if (session && statement) return executeGeneric<T>(session, await statement, built.params);
  const prepared = db._.session.prepareQuery(built, undefined, name, false);
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

/** PGlite's own client, for a simple-protocol string of several statements. */
interface ExecClient {
  exec(text: string, options: QueryOptions): Promise<ReadonlyArray<{ readonly rows: readonly unknown[] }>>;
}

const asText = (value: string) => value;
/** Array types drizzle's PGlite session also leaves as text; PGlite's `types` names no arrays. */
const NUMERIC_ARRAY = 1231;
const TIMESTAMP_ARRAY = 1115;
const TIMESTAMPTZ_ARRAY = 1185;
const INTERVAL_ARRAY = 1187;
const DATE_ARRAY = 1182;
/** drizzle's own parsing of a raw query's rows on PGlite: dates, times and intervals stay text, for the columns' decoders. */
const DRIZZLE_ROWS: QueryOptions = {
  rowMode: 'object',
  parsers: Object.fromEntries(
    [types.TIMESTAMP, types.TIMESTAMPTZ, types.INTERVAL, types.DATE, NUMERIC_ARRAY, TIMESTAMP_ARRAY, TIMESTAMPTZ_ARRAY, INTERVAL_ARRAY, DATE_ARRAY].map((oid) => [
      oid,
      asText,
    ]),
  ),
};

/**
 * `EXECUTE` of a statement PREPAREd on PGlite's session, on one generic plan, as PostgreSQL's
 * planned pool runs the feed's diff (Database.planned): left to choose, PostgreSQL planned the
 * feed's diff again on every run once it guessed the generic plan the costlier (3.5 ms of
 * planning for 1.2 ms of execution, a clinician with 160 visits). `SET LOCAL` in the same
 * simple-protocol string lasts only for it.
 */
async function executeGeneric<R>(client: object, statement: string, params: readonly unknown[]): Promise<R[]> {
  const text = `set local plan_cache_mode = force_generic_plan; ${executeText(statement, params)}`;
  const results = await (client as ExecClient).exec(text, DRIZZLE_ROWS);
  return (results[results.length - 1]?.rows ?? []) as R[];
}

/**
 * A drizzle prepared query with placeholders on a one-session database (PGlite), prepared in
 * SQL once per session under `name` and run by `EXECUTE` with the placeholders' values — on
 * whatever `db` is at the call (the database or the ambient transaction): the caller holds one
 * per database. On the database itself each run keeps one generic plan (`executeGeneric`).
 */
export function sessionPrepared<R>(db: Db, name: string, query: { readonly sql: string; readonly params: readonly unknown[] }) {
  const client = pgliteSessionOf(db);
  let prepared: Promise<void> | null = null;
  return async (values: Record<string, unknown>): Promise<R[]> => {
    if (!prepared) {
      prepared = db.execute(sql.raw(`prepare ${name} as ${query.sql}`)).then(() => {});
      prepared.catch(() => (prepared = null));
    }
    await prepared;
    const params = fillPlaceholders([...query.params], values);
    if (client) return executeGeneric<R>(client, name, params);
    return rowsOf<R>(await db.execute(sql.raw(executeText(name, params))));
  };
}

/**
 * A built query whose placeholders each stand once: drizzle numbers every use of a placeholder
 * as a parameter of its own (a statement that names the user twenty times binds it twenty
 * times); here each name is one parameter, used wherever the query used any of its copies.
 * Bound values are left as they are. PostgreSQL then parses each value once, and the driver
 * sends it once.
 */
export function foldPlaceholders(query: { readonly sql: string; readonly params: readonly unknown[] }): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const byName = new Map<string, number>();
  const number = query.params.map((param) => {
    if (is(param, Placeholder)) {
      const known = byName.get(param.name);
      if (known !== undefined) return known;
      byName.set(param.name, params.push(param));
      return params.length;
    }
    return params.push(param);
  });
  let replaced = 0;
  const text = query.sql.replace(/\$(\d+)(?!\d)/g, (match, n: string) => {
    const to = number[Number(n) - 1];
    if (to === undefined) throw new Error(`foldPlaceholders: ${match} names no parameter`);
    replaced++;
    return `$${to}`;
  });
  // Every parameter is used once by drizzle's numbering: anything else is a `$` the fold misread.
  if (replaced !== query.params.length) throw new Error('foldPlaceholders: the query text has parameters it does not list');
  return { sql: text, params };
}
