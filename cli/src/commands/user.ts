import type { Command } from 'commander';
import type { OperationResult } from '@fieldchart/server';
import { limit } from '../options.ts';
import { fields, table } from '../output.ts';
import { runAndPrint } from '../run.ts';

type UserRecord = OperationResult<'user.show'>;

const profileKeys = [
  'uuid',
  'email',
  'first_name',
  'last_name',
  'phone',
  'address',
  'discipline',
  'license_number',
  'license_state',
  'subscription_status',
  'trial_ends_at',
  'needs_onboarding',
  'has_password',
  'linked_providers',
  'created_at',
  'disabled_at',
] as const;

const showUser = (u: UserRecord) => fields(u as unknown as Record<string, unknown>, profileKeys);

export function registerUser(program: Command): void {
  const user = program.command('user').description('List, inspect, disable and enable clinician accounts');

  user
    .command('list')
    .description('List accounts, oldest first')
    .option('-s, --search <text>', 'only accounts whose email or name contains this text')
    .option('--disabled', 'only disabled accounts')
    .option('-n, --limit <n>', 'at most this many accounts (1-1000)', limit, 100)
    .action((opts: { search?: string; disabled?: boolean; limit: number }, cmd: Command) =>
      runAndPrint(
        cmd,
        'user.list',
        { ...(opts.search !== undefined && { search: opts.search }), ...(opts.disabled && { disabled: true }), limit: opts.limit },
        (r) => {
          if (r.items.length === 0) return `No accounts${r.total ? ` in this range (${r.total} match)` : ''}.\n`;
          const rows = table(r.items, [
            ['UUID', (u) => u.uuid],
            ['EMAIL', (u) => u.email],
            ['NAME', (u) => `${u.first_name} ${u.last_name}`],
            ['SUBSCRIPTION', (u) => u.subscription_status],
            ['DISABLED', (u) => (u.disabled ? 'yes' : 'no')],
            ['CREATED', (u) => u.created_at],
          ]);
          return `${rows}${r.items.length} of ${r.total} account${r.total === 1 ? '' : 's'}\n`;
        },
      ),
    );

  user
    .command('show')
    .description('Show one account')
    .argument('<user>', 'the account uuid or email')
    .action((who: string, _opts: unknown, cmd: Command) => runAndPrint(cmd, 'user.show', { user: who }, showUser));

  user
    .command('disable')
    .description('Disable an account: sign-in is refused and every session is revoked at once')
    .argument('<user>', 'the account uuid or email')
    .action((who: string, _opts: unknown, cmd: Command) =>
      runAndPrint(cmd, 'user.disable', { user: who }, (u) => `Disabled ${u.email}; every session is revoked.\n${showUser(u)}`),
    );

  user
    .command('enable')
    .description('Enable a disabled account again (its revoked sessions stay revoked)')
    .argument('<user>', 'the account uuid or email')
    .action((who: string, _opts: unknown, cmd: Command) =>
      runAndPrint(cmd, 'user.disable', { user: who, enable: true }, (u) => `Enabled ${u.email}.\n${showUser(u)}`),
    );
}
