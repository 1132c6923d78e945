/**
 * Exponential backoff with "equal jitter": half the step is fixed, half random, so devices
 * that lost the server at the same moment do not come back at the same moment, and no delay
 * collapses to zero (no spinning).
 */
export interface BackoffOptions {
  /** First delay, ms. Default 500. */
  readonly initialMs?: number;
  /** Ceiling, ms. Default 30 000. */
  readonly maxMs?: number;
}

export class Backoff {
  private attempt = 0;
  private readonly initialMs: number;
  private readonly maxMs: number;

  constructor(options: BackoffOptions = {}, private readonly random: () => number = Math.random) {
    this.initialMs = options.initialMs ?? 500;
    this.maxMs = options.maxMs ?? 30_000;
  }

  /** The next delay; each call doubles the step up to the ceiling. `atLeastMs`: a server's hint. */
  next(atLeastMs = 0): number {
    const step = Math.min(this.maxMs, this.initialMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    return Math.max(atLeastMs, step / 2 + this.random() * (step / 2));
  }

  reset(): void {
    this.attempt = 0;
  }

  /** The longest step: no wait between tries is longer (but a server's hint). */
  get ceilingMs(): number {
    return this.maxMs;
  }
}
