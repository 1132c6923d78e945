/**
 * Overlapping attempts. A handshake may be given longer than the backoff's ceiling (its
 * deadline grows after timeouts, for a server slowed by load: reconnect.ts), but a connect the
 * network swallowed would then hold the device for that whole deadline, long past the moment
 * the server or the network came back. So when the engine's socket has not opened within the
 * ceiling, a second one opens beside it with the first handshake's deadline, and again after
 * each ceiling while the first is stuck. The engine keeps whichever opens first and closes the
 * other before it says hello: the server never sees this device twice at once (it would close
 * one of them as superseded, which the device reads as a cloned install).
 */
import { CLOSE_CODES } from '@fieldchart/schema/sync';
import type { Connection } from './connection.ts';

export interface SpareSocketDeps {
  /** How long the engine's socket may go without opening before a spare opens: the backoff's ceiling. */
  readonly overlapAfterMs: () => number;
  /** The spare's handshake deadline. */
  readonly firstHandshakeMs: () => number;
  /** Opens a socket, unless `wanted` no longer holds once it is ready to (null then). */
  dial(handshakeMs: number, wanted: () => boolean): Promise<Connection | null>;
  /** True while `primary` is still the engine's socket, has not opened, and syncing runs. */
  stuck(primary: Connection): boolean;
  onError(err: unknown): void;
}

export class SpareSocket {
  private socket: Connection | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(private readonly deps: SpareSocketDeps) {}

  /** The engine's socket `primary` began with `handshakeMs`: a spare follows if that is past the ceiling. */
  arm(primary: Connection, handshakeMs: number): void {
    this.cancelTimer();
    // A handshake that runs out within the ceiling is tried again by the backoff anyway.
    if (handshakeMs > this.deps.overlapAfterMs()) this.schedule(primary);
  }

  is(conn: Connection): boolean {
    return conn === this.socket;
  }

  /** The spare, handed over to be the engine's socket; null if none is opening. */
  take(): Connection | null {
    this.cancelTimer();
    const socket = this.socket;
    this.socket = null;
    return socket;
  }

  /** The spare ended before it opened: another one after the ceiling while `primary` is stuck. */
  ended(primary: Connection | null): void {
    this.socket = null;
    if (primary) this.schedule(primary);
  }

  /** No spare, none to come (the engine's socket opened, or it is closing). */
  drop(): void {
    this.take()?.close(CLOSE_CODES.normal, 'another socket opened first');
  }

  private schedule(primary: Connection): void {
    this.cancelTimer();
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.open(primary).catch((err: unknown) => this.deps.onError(err));
    }, this.deps.overlapAfterMs());
  }

  private async open(primary: Connection): Promise<void> {
    const wanted = () => this.socket === null && this.deps.stuck(primary);
    if (!wanted()) return;
    const socket = await this.deps.dial(this.deps.firstHandshakeMs(), wanted);
    if (socket) this.socket = socket;
  }

  private cancelTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
