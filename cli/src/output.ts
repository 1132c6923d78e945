/** Plain-text rendering for people; `--json` prints the operation's result instead. */

export type Column<T> = readonly [header: string, value: (row: T) => unknown];

const cell = (v: unknown): string => (v === null || v === undefined || v === '' ? '-' : Array.isArray(v) ? v.join(', ') || '-' : String(v));

/** A left-aligned table with a header row; columns are as wide as their widest cell. */
export function table<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const cells = [columns.map(([h]) => h), ...rows.map((r) => columns.map(([, f]) => cell(f(r))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => line[i]?.length ?? 0)));
  return cells.map((line) => line.map((c, i) => (i === line.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ')).join('\n') + '\n';
}

/** `key: value` lines, keys padded to one width. */
export function fields(record: Record<string, unknown>, keys: readonly string[] = Object.keys(record)): string {
  const width = Math.max(...keys.map((k) => k.length)) + 1;
  return keys.map((k) => `${`${k}:`.padEnd(width)} ${cell(record[k])}`).join('\n') + '\n';
}

export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
