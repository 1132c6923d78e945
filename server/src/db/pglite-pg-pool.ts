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
import pg from 'pg';
import type { Pool } from 'pg';
import type { EmbeddedPglite } from './pglite-thread-client.ts';
import { PglitePgClient, type PglitePgClientOwner } from './pglite-pg-client.ts';
import { answerQuery, type PgQueryCallback, type PgQueryConfig, type PgQueryResult, type PgRow } from './pg-wire-values.ts';

export { PglitePgClient } from './pglite-pg-client.ts';
export type { PgQueryCallback, PgQueryConfig, PgQueryResult, PgRow } from './pg-wire-values.ts';

export interface PglitePgPoolOptions {
  /** Reported as `options.max` for callers that size things by it (graphile-worker warns when it
   * is below its concurrency); nothing is limited, since clients cost nothing here. */
  max?: number;
}

export type PgConnectCallback = (
  err: Error | undefined,
  client: PglitePgClient | undefined,
  done: (err?: Error | boolean) => Promise<void>,
) => void;

/**
 * The subset of `pg.Pool` that graphile-worker 0.17.3 uses: `connect()` (promise and callback),
 * `query()`, `end()`, `on/removeListener/listeners('error'|'connect')`, `options.max` and the
 * count getters. Every `connect()` makes a fresh client (emitting 'connect' and 'acquire', as pg
 * does for a new connection), so there is nothing idle and nothing to wait for.
 */
export class PglitePgPool extends EventEmitter implements PglitePgClientOwner {
  readonly options: { max: number };
  readonly #pglite: EmbeddedPglite;
  readonly #active = new Set<PglitePgClient>();
  #nextProcessId = 1;
  #ending = false;
  #ended = false;
  #drained: (() => void) | null = null;

  constructor(pglite: EmbeddedPglite, options: PglitePgPoolOptions = {}) {
    super();
    this.#pglite = pglite;
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
    // Same as pg.Pool#query: a one-shot client, released whatever happens.
    return answerQuery(valuesOrCallback, maybeCallback, async (values) => {
      const client = await this.connect();
      try {
        return await client.query<R>(textOrConfig, values);
      } finally {
        await client.release();
      }
    });
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
export async function unlockDeadWorkers(pglite: EmbeddedPglite): Promise<number> {
  const schema = pg.escapeIdentifier('graphile_worker');
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
