/**
 * Values and results the way `pg` encodes and parses them, for the PGlite pg adapter
 * (see pglite-pg-pool.ts): parameters through pg's own encoder, rows through the query's type parsers.
 */
import { createRequire } from 'node:module';
import pg from 'pg';
import type { CustomTypesConfig, FieldDef } from 'pg';
import type { Results } from '@electric-sql/pglite';
import type { EmbeddedPglite } from './embedded-pglite.ts';

// `pg/lib/utils` has no type declarations, so it is loaded untyped and narrowed below.
const requireCjs = createRequire(import.meta.url);

/** pg's own parameter encoder: Dates as local timestamps with offset, arrays as array
 * literals, objects as JSON (or `toPostgres()`), Buffers untouched (sent in binary). */
export const prepareValue: (value: unknown) => string | Buffer | null = loadPrepareValue();

function loadPrepareValue(): (value: unknown) => string | Buffer | null {
  const utils: unknown = requireCjs('pg/lib/utils');
  if (typeof utils === 'object' && utils !== null && 'prepareValue' in utils) {
    const fn: unknown = utils.prepareValue;
    if (typeof fn === 'function') {
      return (value) => {
        const prepared: unknown = fn(value);
        if (prepared === null || typeof prepared === 'string' || Buffer.isBuffer(prepared)) {
          return prepared;
        }
        throw new TypeError(`pg's prepareValue returned an unexpected ${typeof prepared}`);
      };
    }
  }
  throw new Error('pg/lib/utils does not export prepareValue; is pg@8 installed?');
}

/** The query config shapes pg accepts and graphile-worker uses (`{ text, values, name }`). */
export interface PgQueryConfig {
  text: string;
  values?: readonly unknown[] | undefined;
  /** Prepared-statement name. Accepted and ignored: PGlite runs every extended query as the
   * unnamed statement, so there is no per-connection cache to keep and no 42P05 collision. */
  name?: string | undefined;
  rowMode?: 'array' | undefined;
  types?: CustomTypesConfig | undefined;
  queryMode?: 'extended' | undefined;
}

/** A row as pg returns it; callers name the columns' types with the query's type argument. */
export type PgRow = Record<string, unknown>;

/** pg's `QueryResult`, with `oid` typed as pg really sets it (null unless the command is INSERT). */
export interface PgQueryResult<R = PgRow> {
  command: string;
  rowCount: number | null;
  oid: number | null;
  fields: FieldDef[];
  rows: R[];
}

export type PgQueryCallback<R> = (err: Error | null, result: PgQueryResult<R> | undefined) => void;

export interface NormalizedQuery {
  text: string;
  values: readonly unknown[] | undefined;
  rowMode: 'array' | undefined;
  types: CustomTypesConfig;
  extended: boolean;
}

// Typed for strings, but Buffers from prepareValue pass through too, and PGlite's pg-protocol
// then sends them as binary parameters, just as pg does.
const passThroughSerializer = (x: string): string => x;
const passThroughParser = (x: string): string => x;

/** Every oid maps to the pass-through serializer, because values arrive already encoded by
 * pg's prepareValue and PGlite must neither re-encode them nor stringify Buffers (its fallback
 * for oids it has no serializer for is `toString()`). A proxy covers oids added later too. */
export const passThroughSerializers = new Proxy<Record<number | string, (x: string) => string>>(
  {},
  { get: () => passThroughSerializer },
);

/** PGlite merges `parsers` by spreading, which a proxy cannot fake, so the pass-through map is
 * built from the keys of the instance's own parsers (oids without one already come back raw). */
const rawParsersCache = new WeakMap<EmbeddedPglite, { keyCount: number; parsers: Record<string, (x: string) => string> }>();

export function rawParsersFor(pglite: EmbeddedPglite): Record<string, (x: string) => string> {
  const keys = Object.keys(pglite.parsers);
  const cached = rawParsersCache.get(pglite);
  if (cached && cached.keyCount === keys.length) return cached.parsers;
  const parsers: Record<string, (x: string) => string> = {};
  for (const key of keys) parsers[key] = passThroughParser;
  rawParsersCache.set(pglite, { keyCount: keys.length, parsers });
  return parsers;
}

export function commandResult(command: string): PgQueryResult<never> {
  return { command, rowCount: null, oid: null, fields: [], rows: [] };
}

export function toPgResult<R>(result: Results<unknown>, query: NormalizedQuery): PgQueryResult<R> {
  const fields: FieldDef[] = result.fields.map((f) => ({
    name: f.name,
    dataTypeID: f.dataTypeID,
    // PGlite's parsed results keep only name and type; pg would report these from RowDescription.
    tableID: 0,
    columnID: 0,
    dataTypeSize: -1,
    dataTypeModifier: -1,
    format: 'text',
  }));
  const parsers = fields.map((f) => query.types.getTypeParser(f.dataTypeID, 'text'));
  const rows: unknown[] = result.rows.map((raw) => {
    if (!Array.isArray(raw)) throw new Error('expected PGlite to return rows as arrays');
    const values = raw.map((value: unknown, i) => {
      if (value === null || value === undefined) return null;
      const parse = parsers[i];
      return parse ? parse(String(value)) : value;
    });
    if (query.rowMode === 'array') return values;
    const row: Record<string, unknown> = {};
    fields.forEach((f, i) => {
      row[f.name] = values[i];
    });
    return row;
  });
  const command = result.command ?? '';
  return {
    command,
    rowCount: result.rowCount ?? null,
    oid: command === 'INSERT' ? 0 : null,
    fields,
    // The caller picks R, exactly as with pg: rows are whatever the SQL returned.
    rows: rows as R[],
  };
}

export function normalizeQuery(textOrConfig: string | PgQueryConfig, values: readonly unknown[] | undefined): NormalizedQuery {
  const config: PgQueryConfig = typeof textOrConfig === 'string' ? { text: textOrConfig } : textOrConfig;
  if (typeof config !== 'object' || config === null || typeof config.text !== 'string') {
    throw new TypeError('Client was passed a null or undefined query');
  }
  const vals = values ?? config.values;
  if (vals !== undefined && !Array.isArray(vals)) {
    throw new TypeError('Query values must be an array');
  }
  // Same rule as pg's Query#requiresPreparation: only parameterised or named queries use the
  // extended protocol; the rest go as simple queries, which may hold several statements.
  const extended =
    config.queryMode === 'extended' || Boolean(config.name) || (vals !== undefined && vals.length > 0);
  return {
    text: config.text,
    values: vals,
    rowMode: config.rowMode,
    types: config.types ?? pg.types,
    extended,
  };
}

/**
 * pg's `query(text, values?, callback?)`: the call's values, and its answer as pg gives it —
 * the promise, or (given a callback) nothing, the callback told when `run` settles.
 */
export function answerQuery<R>(
  valuesOrCallback: readonly unknown[] | PgQueryCallback<R> | undefined,
  maybeCallback: PgQueryCallback<R> | undefined,
  run: (values: readonly unknown[] | undefined) => Promise<PgQueryResult<R>>,
): Promise<PgQueryResult<R>> | void {
  const callback = typeof valuesOrCallback === 'function' ? valuesOrCallback : maybeCallback;
  const promise = run(typeof valuesOrCallback === 'function' ? undefined : valuesOrCallback);
  if (!callback) return promise;
  promise.then(
    (result) => callback(null, result),
    (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), undefined),
  );
}
