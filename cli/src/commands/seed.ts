import type { Command } from 'commander';
import { CliError, EXIT } from '../errors.ts';
import { runAndPrint } from '../run.ts';

export function registerSeed(program: Command): void {
  program
    .command('seed')
    .description('Load sample data')
    .option(
      '--demo',
      'a demo clinician with three weeks of visits (past ones documented with notes, timer events and mileage; today; upcoming) ' +
        'for 12 patients in Columbus, OH; safe to run again (nothing is duplicated)',
    )
    .action((opts: { demo?: boolean }, cmd: Command) => {
      if (!opts.demo) throw new CliError('say what to seed: --demo', 'usage', EXIT.usage);
      return runAndPrint(cmd, 'seed.demo', {}, (r) =>
        [
          `Demo clinician ${r.account_created ? 'created' : 'already present'}: ${r.email}`,
          `Password: ${r.password}`,
          `Time zone ${r.time_zone}, today ${r.today}`,
          `Patients: ${r.patients.total} (${r.patients.created} new)`,
          `Visits: ${r.visits.total} (${r.visits.created} new): ${r.visits.completed} completed, ${r.visits.today} today, ${r.visits.upcoming} upcoming`,
          '',
        ].join('\n'),
      );
    });
}
