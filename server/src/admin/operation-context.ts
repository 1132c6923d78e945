import type { Database } from '../db/database.ts';
import type { MigrationStatus } from '../db/migrate.ts';
import type { Progress } from '../progress.ts';
import type { Services } from '../services/index.ts';
import type { BackupResult } from './embedded-backup.ts';

/**
 * What every operator command runs against. A module of its own so the operation tables
 * (operation.ts, *-operations.ts) and the table of tables (operations.ts) all depend on it
 * and never on each other.
 */
export interface OperationContext {
  readonly services: Services;
  readonly migrationStatus: () => Promise<MigrationStatus>;
  /** A consistent copy of the embedded database into `file` (absolute path). */
  readonly backup: (file: string, progress?: Progress) => Promise<BackupResult>;
}

/** The context both transports build, so the server and the CLI cannot drift apart. */
export function operationContext(services: Services, database: Database): OperationContext {
  return {
    services,
    // drizzle's migrators load only for `migrate status`: the operation table stays cheap to
    // import, so the CLI can validate a command before it opens anything.
    migrationStatus: async () => (await import('../db/migrate.ts')).migrationStatus(database),
    backup: async (file, progress) => (await import('./embedded-backup.ts')).backupEmbedded(database.pglite, file, progress),
  };
}
