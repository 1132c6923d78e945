/**
 * A worker node without the HTTP server (`fieldchart worker`): the job queue's migrations,
 * the tasks, and a graceful stop. On PostgreSQL any number of them run beside the API nodes
 * (set WORKER_ENABLED=false there to keep the API's event loop free of job work); on the
 * embedded database one process owns the data dir, so a worker node runs only when no server
 * does (it takes the data-dir lock, and the server's own in-process worker covers the case
 * where a server runs).
 */
import Fastify, { type FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.ts';
import { acquireLock, type DataDirLock } from '../db/data-dir-lock.ts';
import { openDatabase } from '../db/database.ts';
import { applyMigrations } from '../db/migrate.ts';
import { unlockDeadWorkers } from '../db/pglite-pg-pool.ts';
import { safeError } from '../log-safety.ts';
import { shutdownSteps } from '../shutdown-steps.ts';
import { buildServices } from '../services/build.ts';
import { openJobQueuePool, prepareJobQueue } from './job-queue-pool.ts';
import { startWorker } from './worker.ts';
import { startWorkerLiveness } from './worker-liveness.ts';

export interface WorkerNode {
  readonly log: FastifyBaseLogger;
  /** Stops taking jobs, waits for the running ones, releases everything. */
  stop(): Promise<void>;
  /** Settles when the worker stops on its own (an error). */
  readonly done: Promise<void>;
}

export async function startWorkerNode(config: Config): Promise<WorkerNode> {
  // The server's logger setup (pino through Fastify), without a server.
  const log = Fastify({ logger: { level: config.logLevel } }).log;
  const cleanups = shutdownSteps(() => log);
  try {
    let lock: DataDirLock | null = null;
    if (config.database.kind === 'pglite') {
      lock = await acquireLock(config.dataDir, { owner: 'server', adminSocket: null });
      const held = lock;
      cleanups.add('data-dir lock', () => held.release());
    }
    const database = await openDatabase(config.database);
    cleanups.add('database', () => database.close());
    await applyMigrations(database);
    if (database.pglite) {
      const released = await unlockDeadWorkers(database.pglite);
      if (released > 0) log.warn({ jobs: released }, 'released the jobs of dead workers');
    }
    const built = await buildServices(config, database.db);
    cleanups.add('services', async () => built.close());

    const pool = openJobQueuePool(config, database, config.worker.concurrency + 2);
    cleanups.add('job queue pool', () => pool.end());
    await prepareJobQueue(pool, { onError: (err) => log.error({ err: safeError(err) }, 'job queue connection error'), log });

    const liveness =
      config.database.kind === 'postgres'
        ? await startWorkerLiveness({
            connectionString: config.database.url,
            pool,
            sweepIntervalMs: config.worker.sweepIntervalMs,
            onError: (err) => log.warn({ err: safeError(err) }, 'worker liveness'),
            onReleased: (workers) => log.warn({ workers }, 'released the jobs of dead workers'),
          })
        : null;
    if (liveness) {
      cleanups.add('worker liveness', () => liveness.close());
      const released = await liveness.sweep();
      if (released > 0) log.warn({ workers: released }, 'released the jobs of dead workers');
    }
    const worker = await startWorker({
      pgPool: pool,
      services: built.services,
      concurrency: config.worker.concurrency,
      log,
      // Most of the grace: a worker node has nothing else to stop but its pools and database.
      stopWithinMs: Math.floor(config.shutdownGraceMs * 0.8),
      ...(liveness ? { events: liveness.events } : {}),
    });
    cleanups.add('job worker', () => worker.stop());
    log.info({ database: config.database.kind, concurrency: config.worker.concurrency }, 'Fieldchart worker running');

    const done = new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        if (!worker.running()) {
          clearInterval(timer);
          resolve();
        }
      }, 1000);
      timer.unref();
    });
    return { log, done, stop: () => cleanups.run() };
  } catch (err) {
    await cleanups.run();
    throw err;
  }
}
