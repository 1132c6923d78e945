import type { Command } from 'commander';
import { wholeNumber } from '../options.ts';
import { table } from '../output.ts';
import { runAndPrint } from '../run.ts';

const batchSize = wholeNumber(1, 10_000);

const reencrypted = (r: {
  reencrypted: Record<string, number>;
  total: number;
  failed: number;
  batches: number;
  key_id: string;
  index_key_id: string;
  retokenised: number;
  geocode_cache_dropped: number;
}) =>
  `Re-encrypted ${r.total} value${r.total === 1 ? '' : 's'} under ${r.key_id} in ${r.batches} batches` +
  ` (${Object.entries(r.reencrypted).map(([t, n]) => `${t} ${n}`).join(', ')}).\n` +
  `Name search: ${r.retokenised} patient(s) tokenised again under index key ${r.index_key_id}; ` +
  `${r.geocode_cache_dropped} geocode cache entr${r.geocode_cache_dropped === 1 ? 'y' : 'ies'} under an older index key dropped.\n` +
  (r.failed ? `WARNING: ${r.failed} value(s) no key of the ring opens were left as they are.\n` : '');

export function registerKeys(program: Command): void {
  const keys = program.command('keys').description('The PHI encryption key ring: status, rotation, re-encryption');

  keys
    .command('status')
    .description('The current key id, how many stored values each key id encrypts, and the rows under another blind-index key')
    .action((_opts: unknown, cmd: Command) =>
      runAndPrint(cmd, 'keys.status', {}, (s) => {
        const rows = table(s.keys, [
          ['KEY', (k) => k.id],
          ['CURRENT', (k) => (k.current ? 'yes' : '')],
          ['IN RING', (k) => (k.in_ring ? 'yes' : 'NO')],
          ['VALUES', (k) => k.values],
        ]);
        const source = s.key_source === 'env' ? 'PHI_KEYS (environment)' : s.key_file;
        const { index } = s;
        const previous = index.previous_key_ids.length > 0 ? ` (previous, still searched: ${index.previous_key_ids.join(', ')})` : '';
        const stale = index.stale_patients + index.stale_geocode_cache;
        return (
          `Keys from ${source}\n${rows}${s.not_current} value(s) not under the current key${s.unknown_key_values ? `; ${s.unknown_key_values} under a key the ring lacks` : ''}.\n` +
          `Blind-index key ${index.key_id}${previous}: ${index.stale_patients} patient(s) and ${index.stale_geocode_cache} geocode cache entr${index.stale_geocode_cache === 1 ? 'y' : 'ies'} under another` +
          (stale === 0 && index.previous_key_ids.length > 0 ? '; previous_index_keys may leave the ring.\n' : '.\n')
        );
      }),
    );

  keys
    .command('rotate')
    .description(
      'Make a new key and a new blind-index key current, re-encrypt every stored value and tokenise every name again. Embedded keys (data dir): the key file is ' +
        'rewritten (0600) and a running server swaps its ring in place. With PHI_KEYS set, nothing changes: the new ' +
        'PHI_KEYS value is printed to deploy; run `keys reencrypt` after the deploy.',
    )
    .option('--batch-size <n>', 'rows per transaction (1-10000)', batchSize, 500)
    .action((opts: { batchSize: number }, cmd: Command) =>
      runAndPrint(cmd, 'keys.rotate', { batch_size: opts.batchSize }, (r) =>
        r.rotated
          ? `Rotated ${r.previous_key_id} -> ${r.key_id} (key file ${r.key_file}).\n${reencrypted(r)}`
          : `Not rotated: ${r.next_steps}\n\nPHI_KEYS=${r.phi_keys}\n`,
      ),
    );

  keys
    .command('reencrypt')
    .description('Re-encrypt every value not under the current key (after deploying a new PHI_KEYS, or to finish an interrupted rotation)')
    .option('--batch-size <n>', 'rows per transaction (1-10000)', batchSize, 500)
    .action((opts: { batchSize: number }, cmd: Command) => runAndPrint(cmd, 'keys.reencrypt', { batch_size: opts.batchSize }, reencrypted));
}
