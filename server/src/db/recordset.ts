/**
 * Rows of a table written by one statement whatever their count: the rows go to PostgreSQL as
 * one jsonb parameter and come out of `jsonb_to_recordset` typed by the table's own columns.
 * The column list is named once, in drizzle's keys, and the statement's column names, the
 * recordset's types and its values all follow from it, so a writer cannot list a column in one
 * place and forget it (or mistype it) in another.
 */
import { getTableColumns, sql, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';

type KeyOf<T extends PgTable> = keyof T['_']['columns'] & string;

/**
 * A row as drizzle inserts it, limited to the shape's keys (Dates, numbers, arrays, objects as
 * such): what drizzle may leave out, this may too, and a key left out reads as null.
 */
export type RecordsetRow<T extends PgTable, K extends KeyOf<T>> = Pick<T['$inferInsert'], K>;

export interface RecordsetShape<T extends PgTable, K extends KeyOf<T>> {
  /** `col, col, …`: the columns, in the shape's order, for an INSERT's column list. */
  readonly columns: SQL;
  /** `x."key", x."key", …`: the recordset's values in the same order, for the SELECT beside it. */
  readonly values: SQL;
  /** `col = x."key", …` for every column but the match keys: an UPDATE … FROM's assignments. */
  readonly assignments: SQL;
  /** `jsonb_to_recordset($1::jsonb) as x("key" type, …)`: `rows` as a relation named x. */
  from(rows: ReadonlyArray<RecordsetRow<T, K>>): SQL;
}

/**
 * The shape of `table`'s rows for `keys` (drizzle's property names); `match` names the keys an
 * UPDATE finds its rows by, left out of `assignments`. Made once per statement, at load.
 */
export function recordsetShape<T extends PgTable, K extends KeyOf<T>>(table: T, keys: readonly K[], options: { match?: readonly K[] } = {}): RecordsetShape<T, K> {
  const all = getTableColumns(table) as Record<string, PgColumn>;
  const columnOf = (key: K): PgColumn => {
    const column = all[key];
    if (!column) throw new TypeError(`recordsetShape: no column ${key}`);
    return column;
  };
  const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;
  const list = (parts: string[]) => sql.raw(parts.join(', '));
  // The JSON's members are drizzle's keys, so rows need no renaming on their way out.
  const definitions = list(keys.map((k) => `${ident(k)} ${columnOf(k).getSQLType()}`));
  const match = new Set<string>(options.match ?? []);
  return {
    columns: list(keys.map((k) => ident(columnOf(k).name))),
    values: list(keys.map((k) => `x.${ident(k)}`)),
    assignments: list(keys.filter((k) => !match.has(k)).map((k) => `${ident(columnOf(k).name)} = x.${ident(k)}`)),
    from: (rows) => sql`jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as x(${definitions})`,
  };
}
