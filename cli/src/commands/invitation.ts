import { InvalidArgumentError, type Command } from 'commander';
import { INVITATION_STATUSES } from '@fieldchart/schema/api';
import { limit } from '../options.ts';
import { plural, table } from '../output.ts';
import { runAndPrint } from '../run.ts';

const STATUSES = INVITATION_STATUSES;

function status(value: string): (typeof STATUSES)[number] {
  if (!(STATUSES as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${STATUSES.join(', ')}`);
  return value as (typeof STATUSES)[number];
}

export function registerInvitation(program: Command): void {
  const invitation = program.command('invitation').description('Invitations organization admins sent');

  invitation
    .command('list')
    .description('List invitations, newest first (a pending one past its expiry shows as expired)')
    .option('-o, --organization <organization>', 'only this organization (uuid or exact name)')
    .option('--status <status>', `only this status (${STATUSES.join(', ')})`, status)
    .option('-n, --limit <n>', 'at most this many invitations (1-1000)', limit, 100)
    .action((opts: { organization?: string; status?: (typeof STATUSES)[number]; limit: number }, cmd: Command) =>
      runAndPrint(
        cmd,
        'invitation.list',
        {
          ...(opts.organization !== undefined && { organization: opts.organization }),
          ...(opts.status && { status: opts.status }),
          limit: opts.limit,
        },
        (r) => {
          if (r.items.length === 0) return 'No invitations.\n';
          const rows = table(r.items, [
            ['UUID', (i) => i.uuid],
            ['ORGANIZATION', (i) => i.organization_name],
            ['EMAIL', (i) => i.email],
            ['ROLE', (i) => i.role],
            ['STATUS', (i) => i.status],
            ['EXPIRES', (i) => i.expires_at],
          ]);
          return `${rows}${r.items.length} of ${plural(r.total, 'invitation')}\n`;
        },
      ),
    );
}
