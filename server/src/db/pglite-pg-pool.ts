/**
 * An in-process stand-in for `pg.Pool` backed by a PGlite instance the app also uses directly,
 * so that Graphile Worker (which only speaks `pg`) can run on the embedded database.
 *
 * Why not pglite-socket or `@electric-sql/pglite/node-postgres`: measured on this project, the
 * socket multiplexer does not isolate its connections from in-process use (a rollback on one side
 * erased the other's rows, notifications reached the wrong connection, prepared statements
 * collided), and the node-postgres pool has a single connection that the worker's LISTEN client
 * takes forever. See /work/shared/notes/pglite-facts.md.
 *
 * Limits (inherent to a single embedded backend):
 * - All database work is serialised. A client's BEGIN holds a real PGlite transaction, and so the
 *   whole database, until its COMMIT/ROLLBACK; everyone else's queries wait.
 * - Calling this pool from inside an app `pglite.transaction(...)` deadlocks (the pool waits for
 *   the app's transaction, which waits for the pool). Enqueue jobs inside an app transaction with
 *   `select graphile_worker.add_job(...)` on that transaction instead.
 * - Transaction control (BEGIN/COMMIT/ROLLBACK) must be sent as a statement of its own, and
 *   LISTEN/UNLISTEN only in queries made of nothing else, because those are the shapes recognised.
 * - A LISTEN from a client inside its own transaction while another client's LISTEN waits for
 *   that transaction deadlocks on PGlite's listen mutex; graphile-worker never LISTENs in one.
 */
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import pg from 'pg';
import type { CustomTypesConfig, FieldDef, Notification, Pool } from 'pg';
import { TransactionAbortedError } from '@electric-sql/pglite';
import type { PGlite, QueryOptions, Results, Transaction } from '@electric-sql/pglite';

// `pg/lib/utils` has no type declarations, so it is loaded untyped and narrowed below.
const requireCjs = createRequire(import.meta.url);

/** pg's own parameter encoder: Dates as local timestamps with offset, arrays as array
 * literals, objects as JSON (or `toPostgres()`), Buffers untouched (sent in binary). */
const prepareValue: (value: unknown) => string | Buffer | null = loadPrepareValue();

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

export interface PglitePgPoolOptions {
  /** Close the PGlite instance when `end()` finishes. Off by default: the app owns it. */
  closePgliteOnEnd?: boolean;
  /** Reported as `options.max` for callers that size things by it (graphile-worker warns when it
   * is below its concurrency); nothing is limited, since clients cost nothing here. */
  max?: number;
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

export type PgConnectCallback = (
  err: Error | undefined,
  client: PglitePgClient | undefined,
  done: (err?: Error | boolean) => Promise<void>,
) => void;

type TxAction = 'commit' | 'rollback';

interface OpenTransaction {
  tx: Transaction;
  finish: (action: TxAction) => void;
  /** Settles when `pglite.transaction(...)` does, i.e. after PGlite's COMMIT or ROLLBACK. */
  done: Promise<void>;
}

interface ListenSubscription {
  /** The channel as written in SQL (quoted or not); PGlite's listen/unlisten want that form. */
  sqlName: string;
  callback: (payload: string) => void;
}

type TransactionControl =
  | { kind: 'begin'; modifiers: string }
  | { kind: 'commit' }
  | { kind: 'rollback' };

type ListenStatement = { kind: 'LISTEN' | 'UNLISTEN'; sqlName: string };

interface NormalizedQuery {
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
const passThroughSerializers = new Proxy<Record<number | string, (x: string) => string>>(
  {},
  { get: () => passThroughSerializer },
);

/** PGlite merges `parsers` by spreading, which a proxy cannot fake, so the pass-through map is
 * built from the keys of the instance's own parsers (oids without one already come back raw). */
const rawParsersCache = new WeakMap<PGlite, { keyCount: number; parsers: Record<string, (x: string) => string> }>();

function rawParsersFor(pglite: PGlite): Record<string, (x: string) => string> {
  const keys = Object.keys(pglite.parsers);
  const cached = rawParsersCache.get(pglite);
  if (cached && cached.keyCount === keys.length) return cached.parsers;
  const parsers: Record<string, (x: string) => string> = {};
  for (const key of keys) parsers[key] = passThroughParser;
  rawParsersCache.set(pglite, { keyCount: keys.length, parsers });
  return parsers;
}

/** A busy worker otherwise starved the event loop for seconds (PGlite's calls resolve without
 * ever reaching the macrotask queue); yielding first capped pauses at tens of milliseconds. */
function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function stripTrailingSemicolons(text: string): string {
  return text.trim().replace(/(\s*;)+$/, '').trim();
}

function parseTransactionControl(text: string): TransactionControl | null {
  const statement = stripTrailingSemicolons(text);
  if (statement.includes(';')) return null;
  const begin = /^(?:begin(?:\s+(?:transaction|work))?|start\s+transaction)\b(.*)$/is.exec(statement);
  if (begin) {
    return { kind: 'begin', modifiers: (begin[1] ?? '').trim() };
  }
  const commit = /^(?:commit|end)(?:\s+(?:transaction|work))?(\s+and\s+(?:no\s+)?chain)?$/i.exec(statement);
  if (commit) {
    if (commit[1] && !/\bno\s+chain/i.test(commit[1])) {
      throw new Error('COMMIT AND CHAIN is not supported by the PGlite pg adapter');
    }
    return { kind: 'commit' };
  }
  const rollback = /^(?:rollback|abort)(?:\s+(?:transaction|work))?(\s+and\s+(?:no\s+)?chain)?$/i.exec(statement);
  if (rollback) {
    if (rollback[1] && !/\bno\s+chain/i.test(rollback[1])) {
      throw new Error('ROLLBACK AND CHAIN is not supported by the PGlite pg adapter');
    }
    return { kind: 'rollback' };
  }
  // Everything else, including ROLLBACK TO SAVEPOINT and PREPARE TRANSACTION, runs as plain SQL.
  return null;
}

/** Recognises queries made only of LISTEN/UNLISTEN statements, such as graphile-worker's
 * `LISTEN "jobs:insert"; LISTEN "worker:migrate";` sent as one simple query. */
function parseListenStatements(text: string): ListenStatement[] | null {
  const statementRe = /\s*(LISTEN|UNLISTEN)\s+("(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*|\*)\s*(?:;|$)/iy;
  const statements: ListenStatement[] = [];
  let pos = 0;
  while (pos < text.length) {
    if (/^\s*$/.test(text.slice(pos))) break;
    statementRe.lastIndex = pos;
    const match = statementRe.exec(text);
    if (!match || match.index !== pos) return null;
    const kind = (match[1] ?? '').toUpperCase() === 'LISTEN' ? 'LISTEN' : 'UNLISTEN';
    const sqlName = match[2] ?? '';
    if (sqlName === '*' && kind === 'LISTEN') return null;
    statements.push({ kind, sqlName });
    pos = statementRe.lastIndex;
  }
  return statements.length > 0 ? statements : null;
}

/** The channel name PostgreSQL sees, which is what PGlite keys its listeners by. */
function channelKey(sqlName: string): string {
  if (sqlName.startsWith('"')) {
    const inner = sqlName.slice(1, -1);
    if (inner.includes('""')) {
      // PGlite's own toPostgresName does not unescape "", so its listener key would never match
      // the channel PostgreSQL reports; refuse rather than silently never deliver.
      throw new Error(`LISTEN on a channel name containing '"' is not supported: ${sqlName}`);
    }
    return inner;
  }
  return sqlName.toLowerCase();
}

function commandResult(command: string): PgQueryResult<never> {
  return { command, rowCount: null, oid: null, fields: [], rows: [] };
}

function toPgResult<R>(result: Results<unknown>, query: NormalizedQuery): PgQueryResult<R> {
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

function normalizeQuery(textOrConfig: string | PgQueryConfig, values: readonly unknown[] | undefined): NormalizedQuery {
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
 * One checked-out "connection". All clients share PGlite's single backend; what makes them
 * behave like separate connections is that a client's BEGIN holds a PGlite transaction (so no
 * other client's statements run inside it) and that notifications go to the listening client.
 */
export class PglitePgClient extends EventEmitter {
  /** Synthetic and unique per client: there is one backend, so no real pid tells them apart. */
  readonly processID: number;
  readonly escapeIdentifier = pg.escapeIdentifier;
  readonly escapeLiteral = pg.escapeLiteral;

  readonly #pool: PglitePgPool;
  readonly #pglite: PGlite;
  #queue: Promise<unknown> = Promise.resolve();
  #open: OpenTransaction | null = null;
  #subscriptions = new Map<string, ListenSubscription>();
  #released = false;

  constructor(pool: PglitePgPool, pglite: PGlite, processID: number) {
    super();
    this.#pool = pool;
    this.#pglite = pglite;
    this.processID = processID;
  }

  get released(): boolean {
    return this.#released;
  }

  /** 'T' inside a transaction, 'I' otherwise, like pg's (never 'E': PGlite does not expose it). */
  getTransactionStatus(): 'I' | 'T' {
    return this.#open ? 'T' : 'I';
  }

  query<R = PgRow>(textOrConfig: string | PgQueryConfig, values?: readonly unknown[]): Promise<PgQueryResult<R>>;
  query<R = PgRow>(textOrConfig: string | PgQueryConfig, callback: PgQueryCallback<R>): void;
  query<R = PgRow>(
    textOrConfig: string | PgQueryConfig,
    values: readonly unknown[] | undefined,
    callback: PgQueryCallback<R>,
  ): void;
  query<R = PgRow>(
    textOrConfig: string | PgQueryConfig,
    valuesOrCallback?: readonly unknown[] | PgQueryCallback<R>,
    maybeCallback?: PgQueryCallback<R>,
  ): Promise<PgQueryResult<R>> | void {
    const callback = typeof valuesOrCallback === 'function' ? valuesOrCallback : maybeCallback;
    const values = typeof valuesOrCallback === 'function' ? undefined : valuesOrCallback;
    const promise = this.#enqueue(() => this.#run<R>(normalizeQuery(textOrConfig, values)));
    if (!callback) return promise;
    promise.then(
      (result) => callback(null, result),
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), undefined),
    );
  }

  /**
   * Hands the client back. An open transaction is rolled back (pg would return the connection
   * to the pool still inside it; here it would hold the whole database forever), and this
   * client's LISTENs are dropped, since client objects are not reused.
   */
  release(_err?: Error | boolean): Promise<void> {
    if (this.#released) {
      throw new Error('Release called on client which has already been released to the pool.');
    }
    this.#released = true;
    const cleanup = this.#queue.then(() => this.#cleanup());
    return cleanup.then(
      () => this.#pool._clientReleased(this, undefined),
      (err: unknown) => {
        const error = err instanceof Error ? err : new Error(String(err));
        this.#pool._clientReleased(this, error);
      },
    );
  }

  async #cleanup(): Promise<void> {
    let firstError: unknown = null;
    if (this.#open) {
      try {
        await this.#finishTransaction('rollback');
      } catch (err) {
        firstError ??= err;
      }
    }
    for (const sub of [...this.#subscriptions.values()]) {
      try {
        await this.#pglite.unlisten(sub.sqlName, sub.callback);
      } catch (err) {
        firstError ??= err;
      }
    }
    this.#subscriptions.clear();
    if (firstError !== null) throw firstError;
  }

  /** pg runs one query at a time per connection; callers rely on that ordering (e.g. firing
   * BEGIN and the next statement without awaiting in between). */
  #enqueue<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#released) {
      return Promise.reject(new Error('Client has been released to the pool and is not queryable'));
    }
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #run<R>(query: NormalizedQuery): Promise<PgQueryResult<R>> {
    await yieldToEventLoop();
    if (!query.extended) {
      const control = parseTransactionControl(query.text);
      if (control) return this.#transactionControl(control);
      const listens = parseListenStatements(query.text);
      if (listens) return this.#listenControl(listens);
    }
    const target = this.#open?.tx ?? this.#pglite;
    const options: QueryOptions = {
      rowMode: 'array',
      parsers: rawParsersFor(this.#pglite),
      serializers: passThroughSerializers,
    };
    if (query.extended) {
      const params = (query.values ?? []).map((v) => prepareValue(v));
      const result = await target.query<unknown>(query.text, params, options);
      return toPgResult<R>(result, query);
    }
    const results = await target.exec(query.text, options);
    const converted = results.map((r) => toPgResult<R>(r, query));
    // pg resolves a multi-statement simple query with an array of results (its typings hide it).
    if (converted.length === 1 && converted[0]) return converted[0];
    return converted as unknown as PgQueryResult<R>;
  }

  async #transactionControl(control: TransactionControl): Promise<PgQueryResult<never>> {
    switch (control.kind) {
      case 'begin': {
        if (this.#open) {
          // PostgreSQL only warns here and stays in the same transaction.
          return commandResult('BEGIN');
        }
        await this.#begin();
        if (control.modifiers) {
          try {
            await this.#open!.tx.exec(`SET TRANSACTION ${control.modifiers}`);
          } catch (err) {
            // A BEGIN with bad options leaves no transaction open in PostgreSQL either.
            await this.#finishTransaction('rollback');
            throw err;
          }
        }
        return commandResult('BEGIN');
      }
      case 'commit': {
        if (!this.#open) return toPgResultFromExec(await this.#pglite.exec('COMMIT'));
        return commandResult(await this.#finishTransaction('commit'));
      }
      case 'rollback': {
        if (!this.#open) return toPgResultFromExec(await this.#pglite.exec('ROLLBACK'));
        return commandResult(await this.#finishTransaction('rollback'));
      }
    }
  }

  async #begin(): Promise<void> {
    let resolveTx!: (tx: Transaction) => void;
    const txReady = new Promise<Transaction>((resolve) => {
      resolveTx = resolve;
    });
    let finish!: (action: TxAction) => void;
    const finished = new Promise<TxAction>((resolve) => {
      finish = resolve;
    });
    const done = this.#pglite.transaction(async (tx) => {
      resolveTx(tx);
      if ((await finished) === 'rollback') await tx.rollback();
    });
    const tx = await Promise.race([
      txReady,
      done.then(() => {
        throw new Error('PGlite transaction ended before it started');
      }),
    ]);
    this.#open = { tx, finish, done };
  }

  /** Returns the command tag pg would report: COMMIT of a failed transaction reports ROLLBACK. */
  async #finishTransaction(action: TxAction): Promise<'COMMIT' | 'ROLLBACK'> {
    const open = this.#open;
    if (!open) throw new Error('no transaction is open on this client');
    this.#open = null;
    open.finish(action);
    try {
      await open.done;
    } catch (err) {
      if (action === 'commit' && err instanceof TransactionAbortedError) return 'ROLLBACK';
      throw err;
    }
    return action === 'commit' ? 'COMMIT' : 'ROLLBACK';
  }

  async #listenControl(statements: ListenStatement[]): Promise<PgQueryResult<never>> {
    const results: PgQueryResult<never>[] = [];
    for (const statement of statements) {
      if (statement.kind === 'LISTEN') {
        const key = channelKey(statement.sqlName);
        if (!this.#subscriptions.has(key)) {
          const callback = (payload: string): void => {
            if (this.#released) return;
            // PGlite hands listeners only the payload, so the sender's pid is unknown; 0 it is.
            const message: Notification = { processId: 0, channel: key, payload };
            this.emit('notification', message);
          };
          // Going through pglite.listen (not a raw LISTEN) is what registers a callback for the
          // channel; PGlite then routes the NOTIFY to it after the notifying commit.
          await this.#pglite.listen(statement.sqlName, callback, this.#open?.tx);
          this.#subscriptions.set(key, { sqlName: statement.sqlName, callback });
        }
      } else {
        // UNLISTEN (even *) only drops this client's subscriptions: the backend is shared, and a
        // real UNLISTEN * would silence every other client's LISTEN too.
        const keys = statement.sqlName === '*' ? [...this.#subscriptions.keys()] : [channelKey(statement.sqlName)];
        for (const key of keys) {
          const sub = this.#subscriptions.get(key);
          if (!sub) continue;
          this.#subscriptions.delete(key);
          // Not the unsubscribe function listen() returns: that one re-issues UNLISTEN with the
          // unquoted name, a syntax error for channels like "jobs:insert".
          await this.#pglite.unlisten(sub.sqlName, sub.callback, this.#open?.tx);
        }
      }
      results.push(commandResult(statement.kind));
    }
    if (results.length === 1 && results[0]) return results[0];
    return results as unknown as PgQueryResult<never>;
  }
}

function toPgResultFromExec(results: Results[]): PgQueryResult<never> {
  const last = results[results.length - 1];
  return commandResult(last?.command ?? '');
}

/**
 * The subset of `pg.Pool` that graphile-worker 0.17.3 uses: `connect()` (promise and callback),
 * `query()`, `end()`, `on/removeListener/listeners('error'|'connect')`, `options.max` and the
 * count getters. Every `connect()` makes a fresh client (emitting 'connect' and 'acquire', as pg
 * does for a new connection), so there is nothing idle and nothing to wait for.
 */
export class PglitePgPool extends EventEmitter {
  readonly options: { max: number };
  readonly #pglite: PGlite;
  readonly #closePgliteOnEnd: boolean;
  readonly #active = new Set<PglitePgClient>();
  #nextProcessId = 1;
  #ending = false;
  #ended = false;
  #drained: (() => void) | null = null;

  constructor(pglite: PGlite, options: PglitePgPoolOptions = {}) {
    super();
    this.#pglite = pglite;
    this.#closePgliteOnEnd = options.closePgliteOnEnd ?? false;
    this.options = { max: options.max ?? 10 };
  }

  get totalCount(): number {
    return this.#active.size;
  }
  get idleCount(): number {
    return 0;
  }
  get waitingCount(): number {
    return 0;
  }
  get expiredCount(): number {
    return 0;
  }
  get ending(): boolean {
    return this.#ending;
  }
  get ended(): boolean {
    return this.#ended;
  }

  /** graphile-worker's `RunnerOptions.pgPool` is typed as `pg.Pool`. */
  asPgPool(): Pool {
    // pg.Pool's declared surface (Submittable, full pg.Client) exceeds what graphile-worker calls, all implemented here.
    return this as unknown as Pool;
  }

  connect(): Promise<PglitePgClient>;
  connect(callback: PgConnectCallback): void;
  connect(callback?: PgConnectCallback): Promise<PglitePgClient> | void {
    // graphile-worker's LISTEN client uses the callback form: connect(listenForChanges).
    if (callback) {
      this.connect().then(
        (client) => callback(undefined, client, (err) => client.release(err)),
        (err: unknown) =>
          callback(err instanceof Error ? err : new Error(String(err)), undefined, async () => undefined),
      );
      return;
    }
    if (this.#ending) {
      return Promise.reject(new Error('Cannot use a pool after calling end on the pool'));
    }
    const client = new PglitePgClient(this, this.#pglite, this.#nextProcessId++);
    this.#active.add(client);
    this.emit('connect', client);
    this.emit('acquire', client);
    return Promise.resolve(client);
  }

  query<R = PgRow>(textOrConfig: string | PgQueryConfig, values?: readonly unknown[]): Promise<PgQueryResult<R>>;
  query<R = PgRow>(textOrConfig: string | PgQueryConfig, callback: PgQueryCallback<R>): void;
  query<R = PgRow>(
    textOrConfig: string | PgQueryConfig,
    values: readonly unknown[] | undefined,
    callback: PgQueryCallback<R>,
  ): void;
  query<R = PgRow>(
    textOrConfig: string | PgQueryConfig,
    valuesOrCallback?: readonly unknown[] | PgQueryCallback<R>,
    maybeCallback?: PgQueryCallback<R>,
  ): Promise<PgQueryResult<R>> | void {
    const callback = typeof valuesOrCallback === 'function' ? valuesOrCallback : maybeCallback;
    const values = typeof valuesOrCallback === 'function' ? undefined : valuesOrCallback;
    // Same as pg.Pool#query: a one-shot client, released whatever happens.
    const promise = (async () => {
      const client = await this.connect();
      try {
        return await client.query<R>(textOrConfig, values);
      } finally {
        await client.release();
      }
    })();
    if (!callback) return promise;
    promise.then(
      (result) => callback(null, result),
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), undefined),
    );
  }

  /** Like pg: refuses new clients at once, resolves when every checked-out client is released. */
  end(): Promise<void>;
  end(callback: (err?: Error) => void): void;
  end(callback?: (err?: Error) => void): Promise<void> | void {
    const promise = this.#end();
    if (!callback) return promise;
    promise.then(
      () => callback(),
      (err: unknown) => callback(err instanceof Error ? err : new Error(String(err))),
    );
  }

  async #end(): Promise<void> {
    if (this.#ending) throw new Error('Called end on pool more than once');
    this.#ending = true;
    if (this.#active.size > 0) {
      await new Promise<void>((resolve) => {
        this.#drained = resolve;
      });
    }
    if (this.#closePgliteOnEnd && !this.#pglite.closed) await this.#pglite.close();
    this.#ended = true;
  }

  /** @internal Called by a client once its release clean-up has finished. */
  _clientReleased(client: PglitePgClient, error: Error | undefined): void {
    this.#active.delete(client);
    this.emit('release', error, client);
    this.emit('remove', client);
    // A failed clean-up (e.g. ROLLBACK on a closed PGlite) has no caller to throw to; pg reports
    // idle-connection trouble on the pool's 'error' event, and throwing without a listener would
    // crash the process, so only report when someone listens.
    if (error && this.listenerCount('error') > 0) this.emit('error', error, client);
    if (this.#active.size === 0 && this.#drained) {
      const drained = this.#drained;
      this.#drained = null;
      drained();
    }
  }
}

/**
 * Unlocks every job and job queue locked by any worker, returning how many jobs were unlocked.
 *
 * Only for start-up, before this process starts its own worker: the caller holds the data
 * directory's exclusive lock, so any worker id still recorded in the database belongs to a
 * process that died (kill -9, crash). graphile-worker itself only frees such locks after
 * 4 hours. With a live worker running this would unlock jobs it is executing.
 */
export async function unlockDeadWorkers(pglite: PGlite, options: { schema?: string } = {}): Promise<number> {
  const schema = pg.escapeIdentifier(options.schema ?? 'graphile_worker');
  return pglite.transaction(async (tx) => {
    // Before the first migration there is nothing to unlock (and no function to call).
    const installed = await tx.query<{ present: boolean }>(
      `select to_regclass($1) is not null and to_regclass($2) is not null as present`,
      [`${schema}._private_jobs`, `${schema}._private_job_queues`],
    );
    if (!installed.rows[0]?.present) return 0;
    const locked = await tx.query<{ worker_ids: string[] | null; jobs: number }>(
      `select
         (select array_agg(distinct locked_by) from (
            select locked_by from ${schema}._private_jobs where locked_by is not null
            union
            select locked_by from ${schema}._private_job_queues where locked_by is not null
          ) w) as worker_ids,
         (select count(*)::int from ${schema}._private_jobs where locked_by is not null) as jobs`,
    );
    const row = locked.rows[0];
    const workerIds = row?.worker_ids ?? [];
    if (workerIds.length === 0) return 0;
    // force_unlock_workers (migration 000016) clears locked_at/locked_by on both jobs and queues.
    await tx.query(`select ${schema}.force_unlock_workers($1::text[])`, [workerIds]);
    return row?.jobs ?? 0;
  });
}
