/**
 * Releasing the jobs of dead workers on PostgreSQL, safely while other nodes live.
 *
 * graphile-worker frees a locked job only after 4 hours, so a node killed mid-job (kill -9, a
 * lost host) would hold its jobs that long. It cannot tell a dead worker from a slow one; we
 * give it a way: every node holds a session-level advisory lock on its own key
 * (`pg_advisory_lock(LIVENESS_CLASS, key)`) on a dedicated connection for as long as it lives,
 * and records the id of each graphile worker pool and worker it starts under that key in
 * `job_workers`. PostgreSQL
 * releases a session's advisory locks when the session ends — the process died or its
 * connection was lost — so "the key's lock can be taken" proves the node is gone. A sweep (at
 * start-up and every minute) takes each recorded key with `pg_try_advisory_xact_lock`; for the
 * keys it gets, it calls `graphile_worker.force_unlock_workers` on their worker ids and drops
 * their rows. A key whose lock is held belongs to a live node and is never touched; a worker
 * id that was never recorded is left to graphile-worker's own timeout.
 *
 * (The embedded database needs none of this: the data dir's lock proves no other process has
 * it, and start-up unlocks every worker; db/pglite-pg-pool.ts `unlockDeadWorkers`.)
 */
import { EventEmitter } from 'node:events';
import pg from 'pg';

/** The advisory-lock class of liveness keys (arbitrary; distinct from any other use). */
export const LIVENESS_CLASS = 0x46436c76; // 'FClv'

export interface WorkerLiveness {
  /** graphile-worker's event emitter for `run({ events })`: new worker ids are recorded under this node's key. */
  readonly events: EventEmitter;
  /** Releases the jobs of dead nodes' workers; answers how many worker ids were unlocked. */
  sweep(): Promise<number>;
  /** Lets go of the key (the node's workers have stopped). */
  close(): Promise<void>;
}

export async function startWorkerLiveness(opts: {
  connectionString: string;
  /** Runs the sweep and the records (a pool of the job queue). */
  pool: pg.Pool;
  sweepIntervalMs?: number;
  onError?: (err: unknown) => void;
  /** A periodic sweep released this many dead workers' ids (not called when it found none). */
  onReleased?: (workers: number) => void;
}): Promise<WorkerLiveness> {
  const onError = opts.onError ?? (() => {});
  // The session whose life is the node's: keep-alive so a vanished host's session ends too.
  const holder = new pg.Client({ connectionString: opts.connectionString, keepAlive: true, application_name: 'fieldchart-worker-liveness' });
  holder.on('error', onError);
  await holder.connect();
  let key = 0;
  for (let i = 0; i < 20 && key === 0; i++) {
    const candidate = (Math.random() * 0x7fffffff) | 0 || 1;
    const r = await holder.query<{ ok: boolean }>('select pg_try_advisory_lock($1::int, $2::int) as ok', [LIVENESS_CLASS, candidate]);
    if (r.rows[0]?.ok) key = candidate;
  }
  if (key === 0) {
    await holder.end();
    throw new Error('could not take a worker liveness key');
  }

  const events = new EventEmitter();
  const pending = new Set<Promise<unknown>>();
  const record = (workerId: string) => {
    // Recorded after the key is held, so a sweeper that sees the row finds the lock taken.
    const p = opts.pool
      .query('insert into job_workers (worker_id, lock_key) values ($1, $2) on conflict (worker_id) do nothing', [workerId, key])
      .catch(onError)
      .finally(() => pending.delete(p));
    pending.add(p);
  };
  // graphile-worker 0.17 locks jobs in the name of the pool (`locked_by = pool id`) and, in
  // places, of the individual worker: both ids are recorded.
  events.on('pool:create', ({ workerPool }: { workerPool: { id: string } }) => record(workerPool.id));
  events.on('worker:create', ({ worker }: { worker: { workerId: string } }) => record(worker.workerId));

  async function sweep(): Promise<number> {
    const client = await opts.pool.connect();
    try {
      await client.query('begin');
      const keys = await client.query<{ lock_key: number }>('select distinct lock_key from job_workers where lock_key <> $1', [key]);
      const dead: number[] = [];
      for (const { lock_key } of keys.rows) {
        const r = await client.query<{ ok: boolean }>('select pg_try_advisory_xact_lock($1::int, $2::int) as ok', [LIVENESS_CLASS, lock_key]);
        if (r.rows[0]?.ok) dead.push(lock_key);
      }
      let unlocked = 0;
      if (dead.length > 0) {
        const ids = await client.query<{ worker_id: string }>('delete from job_workers where lock_key = any($1::int[]) returning worker_id', [dead]);
        const workerIds = ids.rows.map((r) => r.worker_id);
        if (workerIds.length > 0) await client.query('select graphile_worker.force_unlock_workers($1::text[])', [workerIds]);
        unlocked = workerIds.length;
      }
      await client.query('commit');
      return unlocked;
    } catch (err) {
      await client.query('rollback').catch(() => {});
      throw err;
    } finally {
      client.release();
    }
  }

  const timer = setInterval(
    () =>
      void sweep().then((n) => {
        if (n > 0) opts.onReleased?.(n);
      }, onError),
    opts.sweepIntervalMs ?? 60_000,
  );
  timer.unref();

  return {
    events,
    sweep,
    async close() {
      clearInterval(timer);
      await Promise.allSettled([...pending]);
      // A clean stop: graphile-worker released its jobs; the rows go with the key.
      await opts.pool.query('delete from job_workers where lock_key = $1', [key]).catch(onError);
      await holder.end().catch(onError);
    },
  };
}
