/**
 * `@fieldchart/server`: the server package's one door. The CLI, the benches and the
 * whole-server tests import this module and nothing else of server/src; what is not exported
 * here is the server's own business and may move without notice.
 *
 * Importing the door is cheap on purpose: it loads configuration, errors, the data-dir lock,
 * the operation table, the admin-socket client and the offline AI tools, nothing more. The
 * database drivers, the services, Fastify with every route, and the job worker load when one
 * of the async functions at the end is first called, so `fieldchart --help`, the AI commands
 * and a command sent to a running server's admin socket never pay for them.
 */
import type { Config } from './config.ts';
import type { Database, DatabaseTarget, Db } from './db/database.ts';
import type { Runtime, RuntimeOptions } from './runtime.ts';
import type { Progress } from './progress.ts';
import type { BuildServicesOptions, BuiltServices } from './services/build.ts';
import type { WorkerNode } from './jobs/worker-node.ts';
import type { RestoreResult } from './admin/embedded-backup.ts';

// Configuration, clock, errors: what every process reads first.
export { ConfigError, loadConfig, type Config } from './config.ts';
export { systemClock, type Clock } from './clock.ts';
export { AppError } from './errors.ts';
export { redactText } from './log-safety.ts';
export { API_PREFIX } from './http/api-prefix.ts';

// The data dir: its owner (one process at a time on the embedded database, see
// shared/notes/pglite-facts.md) and the files an operator may look for in it.
export { acquireLock, DataDirBusy, lockFileOf, readLock, type DataDirLock, type LockInfo } from './db/data-dir-lock.ts';
export { phiKeyFileOf } from './security/phi-keyring.ts';

// Operator commands as data, run in-process or over a running server's admin socket.
export {
  operationContext,
  operations,
  runOperation,
  type OperationArgs,
  type OperationContext,
  type OperationName,
  type OperationResult,
} from './admin/operations.ts';
export { adminSocketOf, callAdminSocket, type AdminReply } from './admin/admin-socket.ts';
export type { Progress, ProgressEvent } from './progress.ts';

// Offline AI tools (`fieldchart ai …`): no database, no services.
export { createNoteGenerator, NoteGenerationError, type GeneratedNote } from './services/ai/notes/index.ts';
export { createSpeechToText, NO_ENGINE_MESSAGE, SttError, type SpeechToText, type Transcript } from './services/ai/stt/index.ts';
export { AudioProcessingError, normaliseToPcm16kMono } from './services/audio/ffmpeg.ts';
export { SNIFF_BYTES, sniffAudio } from './services/audio/sniff.ts';

// Types of what the functions below open and start.
export type { Database, DatabaseTarget, Db } from './db/database.ts';
export type { MigrationStatus } from './db/migrate.ts';
export type { Services } from './services/index.ts';
export type { BuildServicesOptions, BuiltServices } from './services/build.ts';
export type { Runtime, RuntimeOptions } from './runtime.ts';
export type { WorkerNode } from './jobs/worker-node.ts';
export type { BackupResult, RestoreResult } from './admin/embedded-backup.ts';
export type { AuditVerification, BrokenLink } from './services/audit/audit-verify.ts';

// Loaded on first call: the database drivers, the services, Fastify, the worker.

/** Opens PGlite (a data dir, `memory://`) or PostgreSQL, as `config.database` says. */
export async function openDatabase(target: DatabaseTarget): Promise<Database> {
  return (await import('./db/database.ts')).openDatabase(target);
}

/** The application's migrations only (the job queue's are in {@link migrateDatabase}). */
export async function applyMigrations(database: Database): Promise<void> {
  return (await import('./db/migrate.ts')).applyMigrations(database);
}

/** Everything a process that does not run the worker applies first: the app's and the job queue's migrations. */
export async function migrateDatabase(config: Config, database: Database): Promise<void> {
  return (await import('./jobs/job-queue-pool.ts')).migrateDatabase(config, database);
}

/** The services wired from config exactly as the server wires them; `close()` releases the mail transport. */
export async function buildServices(config: Config, db: Db, opts?: BuildServicesOptions): Promise<BuiltServices> {
  return (await import('./services/build.ts')).buildServices(config, db, opts);
}

/** Everything `npm start` runs (lock, database, migrations, worker, HTTP, admin socket); `close()` undoes it. */
export async function startRuntime(config: Config, opts?: RuntimeOptions): Promise<Runtime> {
  return (await import('./runtime.ts')).startRuntime(config, opts);
}

/** `npm start` / `fieldchart serve`: the server from the environment until SIGTERM or SIGINT. */
export async function serve(env?: Record<string, string | undefined>): Promise<void> {
  return (await import('./main.ts')).serve(env);
}

/** `fieldchart worker`: a job-queue worker without the HTTP server. */
export async function startWorkerNode(config: Config): Promise<WorkerNode> {
  return (await import('./jobs/worker-node.ts')).startWorkerNode(config);
}

/** `fieldchart restore`: a backup loaded beside the stopped server's database, then swapped in. */
export async function restoreEmbedded(pgdata: string, file: string, progress: (line: string) => void, meter?: Progress): Promise<RestoreResult> {
  return (await import('./admin/embedded-backup.ts')).restoreEmbedded(pgdata, file, progress, meter);
}
