import type { Command } from 'commander';
import { table } from '../output.ts';
import { runAndPrint } from '../run.ts';

interface DeviceRow {
  readonly client_id: string;
  readonly email: string;
  readonly last_mutation_id: number;
  readonly first_seen_at: string;
  readonly last_seen_at: string | null;
  readonly revoked_at: string | null;
}

const devices = (rows: readonly DeviceRow[]) =>
  table(rows, [
    ['CLIENT ID', (d) => d.client_id],
    ['USER', (d) => d.email],
    ['FIRST SEEN', (d) => d.first_seen_at],
    ['LAST SEEN', (d) => d.last_seen_at ?? '-'],
    ['LAST MUTATION', (d) => d.last_mutation_id],
    ['REVOKED', (d) => d.revoked_at ?? '-'],
  ]);

export function registerDevice(program: Command): void {
  const device = program.command('device').description('The devices (app installs) that sync for a user: list them, revoke a lost one');

  device
    .command('list')
    .description('List the devices that synced for a user, first seen first')
    .requiredOption('--user <user>', 'the account uuid or email')
    .action((opts: { user: string }, cmd: Command) =>
      runAndPrint(cmd, 'device.list', { user: opts.user }, (r) => (r.items.length === 0 ? `No devices for ${r.user}.\n` : devices(r.items))),
    );

  device
    .command('revoke')
    .description(
      'Revoke a device: its socket closes at once, it is refused from then on, its queued writes are not applied, and it wipes its data on its next connection',
    )
    .argument('<client_id>', 'the device’s client id (from `device list`)')
    .option('--user <user>', 'only for this account (uuid or email); default: every account it synced for')
    .action((clientId: string, opts: { user?: string }, cmd: Command) =>
      runAndPrint(cmd, 'device.revoke', { client_id: clientId, ...(opts.user !== undefined && { user: opts.user }) }, (r) =>
        `Revoked device ${clientId} for ${r.revoked.map((d) => d.email).join(', ')}.\n${devices(r.revoked)}`,
      ),
    );
}
