import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { sql } from 'drizzle-orm';
import { buildApp } from './app.ts';
import { systemClock, type Clock } from './clock.ts';
import type { Config } from './config.ts';
import { adminSocketOf, startAdminSocket } from './admin/admin-socket.ts';
import type { OperationContext } from './admin/operations.ts';
import { acquireLock, type DataDirLock } from './db/data-dir-lock.ts';
import { openDatabase, rowsOf, type Database } from './db/database.ts';
import { applyMigrations } from './db/migrate.ts';
import { PglitePgPool, unlockDeadWorkers } from './db/pglite-pg-pool.ts';
import { migrateJobQueue, startWorker, type Worker } from './jobs/worker.ts';
import { createMailTransport, type MailTransport } from './mail/transport.ts';
import { createIdTokenVerifier, type IdTokenVerifier } from './security/id-token-verifier.ts';
import { loadSigningKeys } from './security/signing-keys.ts';
import { createServices, type Services } from './services/index.ts';

export interface Runtime {
  readonly config: Config;
  readonly app: FastifyInstance;
  readonly services: Services;
  readonly database: Database;
  readonly worker: Worker | null;
  /** The URL the server listens on, when it listens. */
  readonly url: string | null;
  close(): Promise<void>;
}

export interface RuntimeOptions {
  /** Listen on config.host:config.port (default true). */
  readonly listen?: boolean;
  readonly clock?: Clock;
  readonly idTokens?: IdTokenVerifier;
  readonly mailTransport?: MailTransport;
  /** An already-open database (tests restore a migrated template); otherwise opened from config. */
  readonly database?: Database;
}

export async function migrationsApplied(database: Database): Promise<number> {
  const rows = rowsOf<{ n: number }>(
    await database.db.execute(sql`select count(*)::int as n from drizzle.__drizzle_migrations`),
  );
  return Number(rows[0]?.n ?? 0);
}

/**
 * Boots everything `npm start` runs: the data-dir lock (embedded), database and migrations,
 * job queue and worker, the HTTP server and the admin socket. `close()` undoes it in order.
 */
export async function startRuntime(config: Config, opts: RuntimeOptions = {}): Promise<Runtime> {
  const cleanups: Array<() => Promise<void>> = [];
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) await fn().catch(() => {});
  };
  try {
    const embedded = config.database.kind === 'pglite';
    let lock: DataDirLock | null = null;
    if (embedded && !opts.database) {
      lock = await acquireLock(config.dataDir, { owner: 'server', adminSocket: adminSocketOf(config.dataDir) }, { waitMs: 10_000 });
      const held = lock;
      cleanups.push(() => held.release());
    }

    const database = opts.database ?? (await openDatabase(config.database));
    cleanups.push(() => database.close());
    await applyMigrations(database);

    let pgPool: pg.Pool;
    if (database.pglite) {
      // The lock says no other process has this database: any worker lock in it is a dead one.
      await unlockDeadWorkers(database.pglite);
      pgPool = new PglitePgPool(database.pglite, { max: config.worker.concurrency + 2 }).asPgPool();
    } else if (config.database.kind === 'postgres') {
      pgPool = new pg.Pool({ connectionString: config.database.url, max: config.worker.concurrency + 2 });
    } else {
      throw new Error('database and config disagree on the database kind');
    }
    const pool = pgPool;
    cleanups.push(() => pool.end());
    const onPoolError = (err: Error) => console.error(`job queue connection error: ${err.message}`);
    pool.on('error', onPoolError);
    pool.on('connect', (client: pg.PoolClient) => client.on('error', onPoolError));

    const signingKeys = await loadSigningKeys({ privateJwks: config.jwt.privateJwks, dataDir: config.dataDir });
    const mailTransport =
      opts.mailTransport ?? createMailTransport({ smtpUrl: config.mail.smtpUrl, from: config.mail.from, dataDir: config.dataDir });
    cleanups.push(async () => mailTransport.close());
    const idTokens =
      opts.idTokens ??
      createIdTokenVerifier({
        providers: { google: config.social.google, apple: config.social.apple },
      });
    const services = createServices({ config, db: database.db, clock: opts.clock ?? systemClock, signingKeys, idTokens, mailTransport });

    let worker: Worker | null = null;
    const app = await buildApp({
      config,
      services,
      probe: { database: () => database.ping(), workerRunning: () => worker?.running() ?? false },
    });
    cleanups.push(() => app.close());

    await migrateJobQueue(pool, app.log);
    if (config.worker.enabled) {
      worker = await startWorker({ pgPool: pool, services, concurrency: config.worker.concurrency, log: app.log });
      const w = worker;
      cleanups.push(() => w.stop());
    }

    let url: string | null = null;
    if (opts.listen !== false) {
      url = await app.listen({ host: config.host, port: config.port });
    } else {
      await app.ready();
    }

    if (lock) {
      const ctx: OperationContext = { services, migrationsApplied: () => migrationsApplied(database) };
      const admin = await startAdminSocket(adminSocketOf(config.dataDir), ctx);
      cleanups.push(() => admin.close());
    }

    let closing: Promise<void> | null = null;
    return {
      config,
      app,
      services,
      database,
      worker,
      url,
      close: () => (closing ??= cleanup()),
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}
