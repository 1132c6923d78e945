import path from 'node:path';
import type { Command } from 'commander';
import { CliError, EXIT } from '../errors.ts';
import { progressReporter } from '../progress.ts';
import { configFromEnvironment, printedResult, type GlobalOptions } from '../run.ts';

/** Progress goes to stderr, one plain line per step: stdout stays the result (and `--json` clean). */
function progressOf(name: string): (line: string) => void {
  return (line) => process.stderr.write(`${name}: ${line}\n`);
}

const megabytes = (bytes: number) => (bytes / (1024 * 1024)).toFixed(1);

/**
 * `fieldchart backup` and `fieldchart restore`: the embedded database. PostgreSQL has its own
 * tools (pg_dump, base backups and WAL archiving); docs/operations.md says how.
 */
export function registerBackup(program: Command): void {
  program
    .command('backup')
    .description(
      'Copy the embedded database to <file> (gzipped tar), consistent also while the server runs (through its admin socket). ' +
        'The PHI keys (<data dir>/keys) and stored audio are not in it: back them up apart',
    )
    .argument('<file>', 'where to write the backup')
    .action(async (file: string, _opts: unknown, cmd: Command) => {
      const target = path.resolve(file);
      const progress = progressOf('backup');
      progress(`copying the embedded database to ${target}`);
      const result = await printedResult(cmd, 'db.backup', { file: target }, (r) => `${r.file}\n`);
      progress(`done: ${megabytes(result.bytes)} MB in ${(result.took_ms / 1000).toFixed(1)} s`);
    });

  program
    .command('restore')
    .description(
      'Replace the embedded database with a backup made by `fieldchart backup`. The server must be stopped; ' +
        'the database that was there is kept beside it (pgdata.before-restore-<time>)',
    )
    .argument('<file>', 'the backup to restore')
    .action(async (file: string, _opts: unknown, cmd: Command) => {
      const config = configFromEnvironment();
      if (config.database.kind !== 'pglite') {
        throw new CliError('restore replaces the embedded database; on PostgreSQL use pg_restore (docs/operations.md)', 'not_embedded', EXIT.usage);
      }
      // Steps as plain lines (where the previous database went matters); reading the file, the
      // long part of a large restore, as a bar on a terminal or tenths otherwise.
      const reporter = progressReporter('restore');
      const line = progressOf('restore');
      const progress = (text: string) => {
        reporter.stop();
        line(text);
      };
      const { acquireLock, DataDirBusy, restoreEmbedded } = await import('@fieldchart/server');
      let lock;
      try {
        lock = await acquireLock(config.dataDir, { owner: 'cli', adminSocket: null }, { waitMs: 0 });
      } catch (err) {
        if (err instanceof DataDirBusy) {
          throw new CliError(`${err.message}: ${config.dataDir}; stop the server before restoring`, 'data_dir_busy', EXIT.busy);
        }
        throw err;
      }
      try {
        const result = await restoreEmbedded(config.database.dataDir, path.resolve(file), progress, reporter.progress)
          .catch((err: unknown) => {
            throw new CliError((err as Error).message, (err as { code?: string }).code ?? 'restore_failed', EXIT.failed);
          })
          .finally(() => reporter.stop());
        const opts = cmd.optsWithGlobals<GlobalOptions>();
        process.stdout.write(opts.json ? `${JSON.stringify(result, null, 2)}\n` : `${result.restored}\n`);
      } finally {
        await lock.release();
      }
    });
}
