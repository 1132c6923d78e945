/**
 * One checked-out "connection" of the PGlite pg adapter (see pglite-pg-pool.ts): the per-client
 * query queue, transactions held as PGlite transactions, and LISTEN/UNLISTEN.
 */
import { EventEmitter } from 'node:events';
import pg from 'pg';
import type { Notification } from 'pg';
import { TransactionAbortedError } from '@electric-sql/pglite';
import type { QueryOptions, Results, Transaction } from '@electric-sql/pglite';
import type { EmbeddedPglite } from './pglite-thread-client.ts';
import {
  answerQuery,
  commandResult,
  normalizeQuery,
  passThroughSerializers,
  prepareValue,
  rawParsersFor,
  toPgResult,
} from './pg-wire-values.ts';
import type { NormalizedQuery, PgQueryCallback, PgQueryConfig, PgQueryResult, PgRow } from './pg-wire-values.ts';

/**
 * The one thing a client needs from its pool (pglite-pg-pool.ts): being told it was released.
 * Named here, not imported, so the pool depends on the client and not the other way round.
 */
export interface PglitePgClientOwner {
  _clientReleased(client: PglitePgClient, error: Error | undefined): void;
}

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

  readonly #pool: PglitePgClientOwner;
  readonly #pglite: EmbeddedPglite;
  #queue: Promise<unknown> = Promise.resolve();
  #open: OpenTransaction | null = null;
  #subscriptions = new Map<string, ListenSubscription>();
  #released = false;

  constructor(pool: PglitePgClientOwner, pglite: EmbeddedPglite, processID: number) {
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
    return answerQuery(valuesOrCallback, maybeCallback, (values) => this.#enqueue(() => this.#run<R>(normalizeQuery(textOrConfig, values))));
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
