/**
 * The callers of `whenSynced`: answered together once the outbox is empty, the socket is
 * welcomed, the last `synced` is current and — on protocol 2 — every acknowledged entry's own
 * copy has given way to the server's rows; refused together, with the reason, when syncing stops.
 */
import type { StatusStore } from './status.ts';

export interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

export interface SyncWaitersOptions {
  readonly status: StatusStore;
  /** Whether every acknowledged entry's rows have come (FeedReceiver.caughtUp). */
  caughtUp(): Promise<boolean>;
}

export class SyncWaiters {
  private waiting: Waiter[] = [];

  constructor(private readonly opts: SyncWaitersOptions) {}

  /** Resolves when the device is synced (at once if it is now). */
  wait(): Promise<void> {
    const wait = new Promise<void>((resolve, reject) => this.waiting.push({ resolve, reject }));
    void this.settle();
    return wait;
  }

  /** Waiters taken over from elsewhere (a follower tab's, once this tab leads). */
  adopt(waiters: readonly Waiter[]): void {
    this.waiting.push(...waiters);
  }

  /** Answers every waiter if the device is synced now; otherwise they keep waiting. */
  async settle(): Promise<void> {
    const s = this.opts.status.value;
    if (this.waiting.length === 0 || s.pending > 0 || !s.current || !s.connected || !(await this.opts.caughtUp())) return;
    // The status may have moved while the outbox was read.
    const now = this.opts.status.value;
    if (now.pending > 0 || !now.current || !now.connected) return;
    const ws = this.waiting;
    this.waiting = [];
    for (const w of ws) w.resolve();
  }

  /** Syncing stopped: every waiter hears why. */
  rejectAll(err: Error): void {
    const ws = this.waiting;
    this.waiting = [];
    for (const w of ws) w.reject(err);
  }
}
