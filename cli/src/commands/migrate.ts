import type { Command } from 'commander';
import { plural } from '../output.ts';
import { runAndPrint } from '../run.ts';

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description(
      'Apply the database migrations (schema and job queue) and print how many are applied. ' +
        'When a server holds the embedded database it migrated at boot: its status is printed.',
    )
    .action((_opts: unknown, cmd: Command) =>
      // Reaching the database applies the migrations (a server did so when it booted); the
      // operation then reports where the database stands.
      runAndPrint(cmd, 'migrate.status', {}, (s) =>
        `Database is up to date: ${plural(s.applied, 'schema migration')} and ${plural(s.job_queue, 'job queue migration')} applied.\n`,
      ),
    );
}
