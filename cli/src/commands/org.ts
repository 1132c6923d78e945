import { InvalidArgumentError, type Command } from 'commander';
import { ORGANIZATION_STATUSES } from '@fieldchart/schema/api';
import type { OperationResult } from '@fieldchart/server';
import { limit } from '../options.ts';
import { fields, plural, table } from '../output.ts';
import { runAndPrint } from '../run.ts';

type OrgSummary = OperationResult<'org.connect-back-office'>;

const STATUSES = ORGANIZATION_STATUSES;

function status(value: string): (typeof STATUSES)[number] {
  if (!(STATUSES as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${STATUSES.join(', ')}`);
  return value as (typeof STATUSES)[number];
}

const summaryKeys = [
  'uuid',
  'name',
  'type',
  'status',
  'listed',
  'back_office_connected',
  'member_count',
  'email',
  'phone',
  'address',
  'requested_by',
  'approved_at',
  'created_at',
] as const;

const showSummary = (o: OrgSummary) => fields(o as unknown as Record<string, unknown>, summaryKeys);

export function registerOrg(program: Command): void {
  const org = program
    .command('org')
    .description('Organizations: approve requests, connect back offices, seat admins');

  org
    .command('list')
    .description('List organizations by name')
    .option('--status <status>', `only this status (${STATUSES.join(', ')})`, status)
    .option('-s, --search <text>', 'only organizations whose name contains this text')
    .option('-n, --limit <n>', 'at most this many organizations (1-1000)', limit, 100)
    .action((opts: { status?: (typeof STATUSES)[number]; search?: string; limit: number }, cmd: Command) =>
      runAndPrint(
        cmd,
        'org.list',
        { ...(opts.status && { status: opts.status }), ...(opts.search !== undefined && { search: opts.search }), limit: opts.limit },
        (r) => {
          if (r.items.length === 0) return `No organizations${r.total ? ` in this range (${r.total} match)` : ''}.\n`;
          const rows = table(r.items, [
            ['UUID', (o) => o.uuid],
            ['NAME', (o) => o.name],
            ['TYPE', (o) => o.type],
            ['STATUS', (o) => o.status],
            ['LISTED', (o) => (o.listed ? 'yes' : 'no')],
            ['BACK OFFICE', (o) => (o.back_office_connected ? 'connected' : '-')],
            ['MEMBERS', (o) => o.member_count],
          ]);
          return `${rows}${r.items.length} of ${plural(r.total, 'organization')}\n`;
        },
      ),
    );

  org
    .command('show')
    .description('Show one organization: profile, seats, open requests, invitations, claims and effective features')
    .argument('<organization>', 'the organization uuid or exact name')
    .action((ref: string, _opts: unknown, cmd: Command) =>
      runAndPrint(cmd, 'org.show', { organization: ref }, (o) => {
        const members = o.members.length
          ? table(o.members, [
              ['UUID', (m) => m.uuid],
              ['EMAIL', (m) => m.email],
              ['NAME', (m) => `${m.first_name} ${m.last_name}`],
              ['ROLE', (m) => m.role],
              ['SINCE', (m) => m.since],
            ])
          : 'No members.\n';
        const on = Object.entries(o.features)
          .filter(([, v]) => v)
          .map(([k]) => k);
        const invitations = Object.entries(o.invitations).map(([s, n]) => `${s} ${n}`);
        return [
          showSummary(o),
          `pending join requests: ${o.pending_join_requests}`,
          `invitations: ${invitations.length ? invitations.join(', ') : 'none'}`,
          `claims: ${o.claims.length ? o.claims.map((c) => `${c.status} (${c.contact_email})`).join(', ') : 'none'}`,
          `features on: ${on.length ? on.join(', ') : 'none'}`,
          '',
          members,
        ].join('\n');
      }),
    );

  org
    .command('approve')
    .description('Approve a requested organization: it becomes active and listed, and its requester its admin')
    .argument('<organization>', 'the organization uuid or exact name')
    .action((ref: string, _opts: unknown, cmd: Command) =>
      runAndPrint(cmd, 'org.approve', { organization: ref }, (o) =>
        `Approved ${o.name}${o.seated_admin ? `; user ${o.seated_admin} is its admin` : ''}.\n${showSummary(o)}`,
      ),
    );

  org
    .command('connect-back-office')
    .description('Mark the organization as connected to its back office (credential_sync and coverage_sync can turn on)')
    .argument('<organization>', 'the organization uuid or exact name')
    .option('--disconnect', 'mark it as disconnected instead')
    .action((ref: string, opts: { disconnect?: boolean }, cmd: Command) =>
      runAndPrint(cmd, 'org.connect-back-office', { organization: ref, ...(opts.disconnect && { disconnect: true }) }, (o) =>
        `${o.back_office_connected ? 'Connected' : 'Disconnected'} the back office of ${o.name}.\n${showSummary(o)}`,
      ),
    );

  org
    .command('set-admin')
    .description('Make a user an admin of the organization: seats a user without a seat, promotes a member')
    .argument('<organization>', 'the organization uuid or exact name')
    .argument('<user>', 'the user uuid or email')
    .action((ref: string, who: string, _opts: unknown, cmd: Command) =>
      runAndPrint(cmd, 'org.set-admin', { organization: ref, user: who }, (r) =>
        `${r.email} is now an admin${r.previous_role === 'member' ? ' (was a member)' : r.previous_role === 'admin' ? ' (already was)' : ' (newly seated)'}.\n`,
      ),
    );
}
