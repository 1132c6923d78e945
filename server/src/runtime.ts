import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type pg from 'pg';
import { buildApp } from './app.ts';
import { safeError } from './log-safety.ts';
import { shutdownSteps } from './shutdown-steps.ts';
import { closeAppWithin } from './http/close-app.ts';
import type { Clock } from './clock.ts';
import type { Config } from './config.ts';
import { adminSocketOf, startAdminSocket } from './admin/admin-socket.ts';
import { operationContext } from './admin/operations.ts';
import { acquireLock, type DataDirLock } from './db/data-dir-lock.ts';
import { openDatabase, type Database } from './db/database.ts';
import { applyMigrations } from './db/migrate.ts';
import { unlockDeadWorkers } from './db/pglite-pg-pool.ts';
import { openJobQueuePool, prepareJobQueue } from './jobs/job-queue-pool.ts';
import { startWorker, type Worker } from './jobs/worker.ts';
import { startWorkerLiveness } from './jobs/worker-liveness.ts';
import type { MailTransport } from './mail/transport.ts';
import type { IdTokenVerifier } from './security/id-token-verifier.ts';
import { buildServices } from './services/build.ts';
import { GROWTH_CHECK_MS } from './services/maintenance.ts';
import type { InboundSmtp } from './services/messages/inbound-smtp.ts';
import { notificationsOf } from './sync/notifications.ts';
import { systemClock } from './clock.ts';
import { createMetrics, type Metrics } from './metrics/metrics.ts';
import { startMetricsListener } from './metrics/metrics-http.ts';
import type { Services } from './services/index.ts';
import { limitPasswordHashing } from './security/passwords.ts';

export interface Runtime {
  readonly config: Config;
  readonly app: FastifyInstance;
  readonly services: Services;
  readonly database: Database;
  readonly worker: Worker | null;
  /** The URL the server listens on, when it listens. */
  readonly url: string | null;
  /** The inbound SMTP listener for patients' replies, when INBOUND_SMTP_PORT is set. */
  readonly inboundSmtp: InboundSmtp | null;
  /** The figures of /metrics, when METRICS_TOKEN or METRICS_PORT is set. */
  readonly metrics: Metrics | null;
  /** The URL of the METRICS_PORT listener, when it listens. */
  readonly metricsUrl: string | null;
  close(): Promise<void>;
}

/**
 * Requests still in flight this far into the shutdown's grace (counted from the stop's start)
 * have their connections closed, leaving the rest (3 s of the default 10 s) for the pools and
 * the database.
 */
const HTTP_STOP_SHARE = 0.7;

export interface RuntimeOptions {
  /** Listen on config.host:config.port (default true). */
  readonly listen?: boolean;
  readonly clock?: Clock;
  readonly idTokens?: IdTokenVerifier;
  readonly mailTransport?: MailTransport;
  /** An already-open database (tests restore a migrated template); otherwise opened from config. */
  readonly database?: Database;
}

/**
 * Boots everything `npm start` runs: the data-dir lock (embedded), database and migrations,
 * job queue and worker, the HTTP server and the admin socket. `close()` undoes it in order.
 */
export async function startRuntime(config: Config, opts: RuntimeOptions = {}): Promise<Runtime> {
  let log: FastifyBaseLogger | null = null;
  // Each step named, so that a shutdown that fails or drags says where (the log, once there is one).
  const cleanups = shutdownSteps(() => log);
  try {
    const embedded = config.database.kind === 'pglite';
    let lock: DataDirLock | null = null;
    if (embedded && !opts.database) {
      lock = await acquireLock(config.dataDir, { owner: 'server', adminSocket: adminSocketOf(config.dataDir) }, { waitMs: 10_000 });
      const held = lock;
      cleanups.add('data-dir lock', () => held.release());
    }

    const database = opts.database ?? (await openDatabase(config.database));
    cleanups.add('database', () => database.close());
    await applyMigrations(database);

    if (database.pglite) {
      // The lock says no other process has this database: any worker lock in it is a dead one.
      await unlockDeadWorkers(database.pglite);
    }
    if (config.limits.passwordHashConcurrency > 0) limitPasswordHashing(config.limits.passwordHashConcurrency);
    const built = await buildServices(config, database.db, opts);
    cleanups.add('services', async () => built.close());
    const { services } = built;

    let worker: Worker | null = null;
    const metrics =
      config.metrics.token !== null || config.metrics.listen !== null
        ? createMetrics({ db: database.db, appPoolMax: config.database.kind === 'postgres' ? config.database.poolSize : null })
        : null;
    const app = await buildApp({
      config,
      services,
      probe: { database: () => database.ping(), workerRunning: () => worker?.running() ?? false },
      sync: { notifications: notificationsOf(database), clock: opts.clock ?? systemClock, oneSession: database.kind === 'pglite', planned: database.planned },
      ...(metrics ? { metrics } : {}),
    });
    log = app.log;
    await app.syncHub?.start();
    cleanups.add('http and sync', () => closeAppWithin(app, config.shutdownGraceMs * HTTP_STOP_SHARE - cleanups.elapsedMs()));

    const pool: pg.Pool = openJobQueuePool(config, database, config.worker.concurrency + 2);
    cleanups.add('job queue pool', () => pool.end());
    metrics?.watchJobPool(pool);
    await prepareJobQueue(pool, {
      onError: (err) => app.log.error({ err: safeError(err) }, 'job queue connection error'),
      log: app.log,
    });
    if (config.worker.enabled) {
      // PostgreSQL: a liveness key for this node's workers, and the jobs of dead nodes released
      // (jobs/worker-liveness.ts); the embedded database did this above under the data-dir lock.
      const liveness =
        config.database.kind === 'postgres'
          ? await startWorkerLiveness({
              connectionString: config.database.url,
              pool,
              sweepIntervalMs: config.worker.sweepIntervalMs,
              onError: (err) => app.log.warn({ err: safeError(err) }, 'worker liveness'),
              onReleased: (workers) => app.log.warn({ workers }, 'released the jobs of dead workers'),
            })
          : null;
      if (liveness) {
        cleanups.add('worker liveness', () => liveness.close());
        const released = await liveness.sweep();
        if (released > 0) app.log.warn({ workers: released }, 'released the jobs of dead workers');
      }
      worker = await startWorker({
        pgPool: pool,
        services,
        concurrency: config.worker.concurrency,
        log: app.log,
        // Half the shutdown's grace: the HTTP server, the pools and the database close after it.
        stopWithinMs: Math.floor(config.shutdownGraceMs / 2),
        ...(liveness ? { events: liveness.events } : {}),
      });
      const w = worker;
      cleanups.add('job worker', () => w.stop());
    }

    let url: string | null = null;
    if (opts.listen !== false) {
      url = await app.listen({ host: config.host, port: config.port });
    } else {
      await app.ready();
    }

    let metricsUrl: string | null = null;
    if (metrics && config.metrics.listen && opts.listen !== false) {
      const listener = await startMetricsListener(metrics, config.metrics.listen.host, config.metrics.listen.port);
      metricsUrl = listener.url;
      cleanups.add('metrics listener', () => listener.close());
    }

    let inboundSmtp: InboundSmtp | null = null;
    if (config.messages.inboundSmtp && opts.listen !== false) {
      // Loaded only when configured: the CLI and most servers never take mail in.
      const { startInboundSmtp } = await import('./services/messages/inbound-smtp.ts');
      const started = await startInboundSmtp({
        ...config.messages.inboundSmtp,
        replyDomain: config.messages.replyDomain,
        messages: services.messages,
        log: app.log,
      });
      inboundSmtp = started;
      cleanups.add('inbound smtp', () => started.close());
    }

    // Statistics the embedded database has no autovacuum to keep: refreshed after boot (not
    // awaited: the server answers meanwhile) and hourly by the cleanup job.
    void services.maintenance.analyzeEmbedded().catch((err: unknown) => app.log.warn({ err: safeError(err) }, 'analyze failed'));
    if (embedded) {
      // And between those, a table that grew by a fifth (a seed, a device's drained outbox).
      const growth = setInterval(
        () => void services.maintenance.analyzeGrown().catch((err: unknown) => app.log.warn({ err: safeError(err) }, 'analyze failed')),
        GROWTH_CHECK_MS,
      );
      growth.unref();
      cleanups.add('growth check', async () => clearInterval(growth));
    }

    if (lock) {
      const admin = await startAdminSocket(adminSocketOf(config.dataDir), operationContext(services, database), app.log);
      cleanups.add('admin socket', () => admin.close());
    }

    return {
      config,
      app,
      services,
      database,
      worker,
      url,
      inboundSmtp,
      metrics,
      metricsUrl,
      close: () => cleanups.run(),
    };
  } catch (err) {
    await cleanups.run();
    throw err;
  }
}
