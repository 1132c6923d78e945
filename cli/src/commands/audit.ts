import { InvalidArgumentError, type Command } from 'commander';
import { wholeNumber } from '../options.ts';
import type { AuditVerification, BrokenLink } from '@fieldchart/server';
import { CliError } from '../errors.ts';
import { printedResult, runAndPrint } from '../run.ts';

function instant(value: string): string {
  if (Number.isNaN(Date.parse(value))) throw new InvalidArgumentError('must be an ISO 8601 date or time, e.g. 2026-01-31 or 2026-01-31T12:00:00Z');
  return /^\d{4}-\d{2}-\d{2}$/.test(value) ? value : new Date(value).toISOString();
}

const count = wholeNumber(1, 1_000_000);

const REASONS: Record<BrokenLink['reason'], string> = {
  altered: 'the row was changed after it was written',
  missing: 'rows before it are missing or out of place',
  truncated: 'rows at the end of the chain are missing',
};

function describeLink(link: BrokenLink): string {
  return `chain ${link.chain}, position ${link.seq}${link.id === null ? '' : `, audit row id ${link.id}`}: ${REASONS[link.reason]}`;
}

function verificationText(v: AuditVerification): string {
  const checked = `${v.rowsChecked} rows in ${v.chainsChecked} chains`;
  if (v.ok) return `audit trail intact: ${checked}\n${v.heads.map((h) => `head ${h.chain} ${h.seq} ${h.hash}\n`).join('')}`;
  return `audit trail BROKEN (${checked}); first broken link of each broken chain, earliest first:\n${v.broken.map((b) => `  ${describeLink(b)}\n`).join('')}`;
}

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

  audit
    .command('verify')
    .description(
      'Recompute the hash chains of the audit trail and name the first broken link; exit 1 if one is broken. ' +
        'Prints each chain\'s head: keep them outside the database to prove later that nothing was rewritten',
    )
    .option('--chain <key>', 'verify one chain only (user:<uuid>, org:<uuid> or system)')
    .action(async (opts: { chain?: string }, cmd: Command) => {
      const result = await printedResult(cmd, 'audit.verify', opts.chain ? { chain: opts.chain } : {}, verificationText);
      const first = result.broken[0];
      if (first) throw new CliError(`the audit trail is broken; first broken link: ${describeLink(first)}`, 'audit_chain_broken');
    });
}
