import { InvalidArgumentError } from 'commander';

/** commander parser for `--limit <n>`: a whole number from 1 to 1000. */
export function limit(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isInteger(n) || n < 1 || n > 1000) {
    throw new InvalidArgumentError('must be a whole number from 1 to 1000');
  }
  return n;
}
