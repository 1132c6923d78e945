/**
 * When the next socket is tried, and how: one timer with backoff (jitter, a server's least
 * pause), the handshake deadline that grows after handshakes that ran out of time, and the
 * count of failed opens after which the outbox goes over HTTP instead. The engine decides
 * whether to try at all; this module only keeps the clock and the tally of attempts.
 */
import { Backoff, type BackoffOptions } from './backoff.ts';
import { handshakeDeadline } from './connection.ts';

/**
 * Socket opens that failed in a row (no `welcome`) before the outbox is drained over HTTP
 * instead (`POST /sync/mutations`): a network that passes HTTP but not websockets.
 */
export const HTTP_FALLBACK_AFTER = 2;

export class Reconnect {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private readonly backoff: Backoff;
  /** Socket opens that failed in a row with an answer (refused, closed): websockets may be blocked. */
  private failedOpens = 0;
  /** Handshakes in a row that ran out of time: the next one is given longer. */
  private timedOutHandshakes = 0;

  /** `connect`: what the timer calls when it fires. `firstHandshakeMs`: the first handshake's deadline. */
  constructor(
    private readonly connect: () => void,
    private readonly options: { readonly backoff?: BackoffOptions; readonly firstHandshakeMs?: number } = {},
  ) {
    this.backoff = new Backoff(options.backoff);
  }

  /** Tries again after the next backoff delay, at least `atLeastMs`; replaces a timer already set. */
  schedule(atLeastMs = 0): void {
    this.cancel();
    this.timer = setTimeout(() => {
      this.timer = null;
      this.connect();
    }, this.backoff.next(atLeastMs));
  }

  cancel(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** The network came back: the next delay starts from the first step again. */
  resetDelay(): void {
    this.backoff.reset();
  }

  /** A socket was welcomed: every tally starts over. */
  welcomed(): void {
    this.failedOpens = 0;
    this.timedOutHandshakes = 0;
    this.backoff.reset();
  }

  /** What a closed socket's open said (after-close.ts). */
  count(attempt: 'handshake_timed_out' | 'open_failed' | null): void {
    if (attempt === 'handshake_timed_out') this.timedOutHandshakes++;
    else if (attempt === 'open_failed') this.failedOpens++;
  }

  /** The next socket's handshake deadline. */
  get handshakeMs(): number {
    return handshakeDeadline(this.timedOutHandshakes, this.options.firstHandshakeMs);
  }

  /** The first handshake's deadline: a second attempt beside a stuck one gets this long. */
  get firstHandshakeMs(): number {
    return handshakeDeadline(0, this.options.firstHandshakeMs);
  }

  /**
   * How long an attempt may go on before another is opened beside it (the backoff's ceiling):
   * the device tries again at least this often, however long a handshake may take.
   */
  get overlapAfterMs(): number {
    return this.backoff.ceilingMs;
  }

  /** Enough opens failed that websockets look blocked: the outbox may go over HTTP. */
  get websocketsBlocked(): boolean {
    return this.failedOpens >= HTTP_FALLBACK_AFTER;
  }
}
