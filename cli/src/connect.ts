/**
 * How a CLI command reaches the database. Every command is one operation from
 * `@fieldchart/server`'s `operations`, run by one of two transports that answer the same JSON:
 *
 * - PostgreSQL (DATABASE_URL): open the database, migrate, run the operation here, close.
 * - Embedded (PGlite), a live server holds the data dir: send the operation over the server's
 *   admin socket. The directory is never opened — PGlite has no lock of its own, and a second
 *   opener silently loses rows (shared/notes/pglite-facts.md).
 * - Embedded, nobody holds it: take the data-dir lock as 'cli', open, migrate, run, close,
 *   release. A server starting meanwhile waits for the lock; another CLI command too.
 */
import { z } from 'zod';
import {
  acquireLock,
  adminSocketOf,
  AppError,
  buildServices,
  callAdminSocket,
  DataDirBusy,
  migrateDatabase,
  openDatabase,
  operationContext,
  operations,
  readLock,
  redactText,
  runOperation,
  type AdminReply,
  type BuiltServices,
  type Config,
  type LockInfo,
  type OperationArgs,
  type OperationName,
  type Progress,
  type OperationResult,
} from '@fieldchart/server';
import { CliError, EXIT } from './errors.ts';

export interface Outcome<N extends OperationName> {
  /** The operation's result, as JSON would carry it (identical on both transports). */
  readonly result: OperationResult<N>;
  /** How the database was reached, for `--verbose`. */
  readonly via: string;
}

/** How long to wait for another CLI command holding the data dir, or a booting server's socket. */
const WAIT_MS = 30_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The embedded database's shared buffers while one command runs: PGlite zeroes them at every
 * start, and with the server's 128 MB a command on an idle data dir took 2.3 s where it takes
 * 1.9 s with these (`user list`, built CLI, this machine).
 */
const ONE_COMMAND_SHARED_BUFFERS = '16MB';

/** Validates the arguments here, so both transports reject bad input the same way (exit 2). */
function validated<N extends OperationName>(name: N, args: OperationArgs<N>): unknown {
  const parsed = (operations[name].args as z.ZodType).safeParse(args);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`).join('; ');
    throw new CliError(`invalid arguments: ${detail}`, 'validation_failed', EXIT.usage);
  }
  return parsed.data;
}

/** JSON in, JSON out: a local result goes through the same encoding as a socket reply. */
const asJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value ?? null)) as unknown;

function failure(err: unknown, opening = false): CliError {
  if (err instanceof CliError) return err;
  if (err instanceof AppError) return new CliError(err.message, err.code, EXIT.failed);
  if (err instanceof z.ZodError) return new CliError(`invalid arguments: ${err.message}`, 'validation_failed', EXIT.usage);
  // Driver text can quote the values a statement carried: only a redacted message is shown.
  const message = redactText(err instanceof Error ? err.message : String(err));
  if (opening || isDatabaseError(err)) return new CliError(`database error: ${message}`, 'database_error', EXIT.failed);
  return new CliError(`error: ${message}`, 'internal_error', EXIT.failed);
}

/** A driver or ORM error (a SQLSTATE, or drizzle's wrapper with its query), possibly as a cause. */
function isDatabaseError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, query } = e as { code?: unknown; query?: unknown };
    if (typeof query === 'string' || (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code))) return true;
  }
  return false;
}

function unwrap(reply: AdminReply): unknown {
  if (reply.ok) return reply.result;
  const exitCode = reply.error.code === 'validation_failed' ? EXIT.usage : EXIT.failed;
  throw new CliError(reply.error.message, reply.error.code, exitCode);
}

function describePostgres(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname}`;
  } catch {
    return 'the configured server';
  }
}

/** Opens the database in this process, migrates it, runs one operation and closes it again. */
async function runHere(config: Config, name: OperationName, args: unknown, progress?: Progress): Promise<unknown> {
  let database;
  try {
    database = await openDatabase(config.database.kind === 'pglite' ? { ...config.database, sharedBuffers: ONE_COMMAND_SHARED_BUFFERS } : config.database);
  } catch (err) {
    throw failure(err, true);
  }
  let built: BuiltServices | null = null;
  try {
    await migrateDatabase(config, database);
    built = await buildServices(config, database.db);
    return asJson(await runOperation(operationContext(built.services, database), name, args, progress));
  } catch (err) {
    throw failure(err);
  } finally {
    built?.close();
    await database.close().catch(() => {});
  }
}

const RETRY = Symbol('retry');

/**
 * One call on a server's admin socket. The server opens the socket last when it boots and
 * closes it first when it stops: while its lock stands and the socket does not answer, wait;
 * once the lock is gone, the caller decides again (the directory may be free now).
 */
async function callServer(dataDir: string, holder: LockInfo, name: string, args: unknown, deadline: number, progress?: Progress): Promise<unknown> {
  const socket = holder.adminSocket ?? adminSocketOf(dataDir);
  for (;;) {
    let reply: AdminReply | null = null;
    try {
      reply = await callAdminSocket(socket, name, args, undefined, progress);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // Only "nobody listens" is safe to retry: the request never reached the server.
      if (code !== 'ENOENT' && code !== 'ECONNREFUSED') {
        throw new CliError(`admin socket ${socket}: ${(err as Error).message}`, 'admin_socket_failed', EXIT.failed);
      }
    }
    if (reply) return unwrap(reply);
    const current = await readLock(dataDir);
    if (current?.pid !== holder.pid) return RETRY;
    if (Date.now() > deadline) {
      throw new CliError(
        `server process ${holder.pid} holds ${dataDir} but its admin socket (${socket}) does not answer`,
        'admin_socket_unreachable',
        EXIT.busy,
      );
    }
    await sleep(100);
  }
}

/** Runs one operation on the configured database and answers its result and the route taken. */
export async function execute<N extends OperationName>(
  config: Config,
  name: N,
  args: OperationArgs<N>,
  progress?: Progress,
): Promise<Outcome<N>> {
  const input = validated(name, args);

  if (config.database.kind === 'postgres') {
    const result = (await runHere(config, name, input, progress)) as OperationResult<N>;
    return { result, via: `connected to PostgreSQL at ${describePostgres(config.database.url)}` };
  }

  const { dataDir } = config;
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const holder = await readLock(dataDir);
    if (holder?.owner === 'server') {
      const result = await callServer(dataDir, holder, name, input, deadline, progress);
      if (result === RETRY) continue;
      return { result: result as OperationResult<N>, via: `through the admin socket of server process ${holder.pid}` };
    }
    let lock;
    try {
      lock = await acquireLock(dataDir, { owner: 'cli', adminSocket: null }, { waitMs: Math.max(0, deadline - Date.now()) });
    } catch (err) {
      // A server took the directory between the look and the grab: talk to it instead.
      if (err instanceof DataDirBusy && err.holder.owner === 'server' && Date.now() < deadline) continue;
      if (err instanceof DataDirBusy) throw new CliError(`${err.message}: ${dataDir}`, 'data_dir_busy', EXIT.busy);
      throw failure(err);
    }
    try {
      const result = (await runHere(config, name, input, progress)) as OperationResult<N>;
      return { result, via: `opened the embedded database in ${dataDir} (lock held by this process)` };
    } finally {
      await lock.release();
    }
  }
}
