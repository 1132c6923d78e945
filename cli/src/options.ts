import { InvalidArgumentError } from 'commander';

/** A commander parser for a whole-number option from `min` to `max`. */
export function wholeNumber(min: number, max: number): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || !Number.isInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}`);
    }
    return n;
  };
}

/** commander parser for `--limit <n>`: a whole number from 1 to 1000. */
export const limit = wholeNumber(1, 1000);
