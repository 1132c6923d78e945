import { InvalidArgumentError, type Command } from 'commander';
import { wholeNumber } from '../options.ts';
import { runAndPrint } from '../run.ts';

function instant(value: string): string {
  if (Number.isNaN(Date.parse(value))) throw new InvalidArgumentError('must be an ISO 8601 date or time, e.g. 2026-01-31 or 2026-01-31T12:00:00Z');
  return /^\d{4}-\d{2}-\d{2}$/.test(value) ? value : new Date(value).toISOString();
}

const count = wholeNumber(1, 1_000_000);

export function registerAudit(program: Command): void {
  const audit = program.command('audit').description('The PHI access trail (who read or changed which record, never the PHI itself)');

  audit
    .command('export')
    .description('Print audit entries in [from, to), oldest first, one JSON object per line (--json: one JSON array)')
    .option('--from <time>', 'first instant included (ISO 8601; a date means its midnight UTC)', instant)
    .option('--to <time>', 'first instant excluded', instant)
    .option('-n, --limit <n>', 'at most this many entries (default 100000)', count)
    .action((opts: { from?: string; to?: string; limit?: number }, cmd: Command) =>
      runAndPrint(
        cmd,
        'audit.export',
        { ...(opts.from && { from: opts.from }), ...(opts.to && { to: opts.to }), ...(opts.limit && { limit: opts.limit }) },
        (entries) => entries.map((e) => `${JSON.stringify(e)}\n`).join(''),
      ),
    );
}
