import type { Clock } from '../clock.ts';
import type { Db } from '../db/database.ts';
import type { Throttle, ThrottleState } from './throttle.ts';

/** How often a node adds its unflushed counts to the shared table and reads the totals back. */
export const FLUSH_INTERVAL_MS = 250;

interface Tally {
  /** Start of the fixed window (the shared row's once a flush has answered). */
  startedAt: number;
  /** The key's count across every node as of this node's last flush. */
  shared: number;
  /** Requests this node counted since then (none of them in `shared`). */
  unflushed: number;
  /** Of `unflushed`, how many a flush now under way is carrying. */
  sending: number;
}

/**
 * Request counts for the REST rate limits, shared by every node through the sign-in
 * throttle's table without a statement per request: each node counts in memory and, every
 * FLUSH_INTERVAL_MS and on close, adds its counts to the table in one statement that answers
 * the shared totals. A request is judged on (shared total as of the last flush + this node's
 * unflushed count), so across N nodes a window can admit more than the limit by what the
 * other nodes counted since this node last flushed (README "Limits"); one node alone never
 * admits more than the limit.
 */
export function createRequestRate(deps: { db: Db; clock: Clock; throttle: Throttle }) {
  const tallies = new Map<string, Tally>();
  let windowSeconds = 60;
  let timer: NodeJS.Timeout | null = null;
  let flushing: Promise<void> | null = null;
  let closed = false;
  let reportError: (err: unknown) => void = () => {};

  async function flushOnce(): Promise<void> {
    const now = deps.clock.now().getTime();
    const batch: Array<[string, Tally]> = [];
    for (const [key, tally] of tallies) {
      if (tally.startedAt + windowSeconds * 1000 <= now) {
        // The window ended; its uncounted requests belong to a window nobody reads any more.
        tallies.delete(key);
      } else {
        // Idle keys too: their shared count moves with the other nodes' requests.
        tally.sending = tally.unflushed;
        batch.push([key, tally]);
      }
    }
    if (batch.length === 0) return;
    try {
      const states = await deps.throttle.addMany(
        deps.db,
        batch.map(([key, t]) => ({ parts: ['request-rate', key], hits: t.sending, startedAt: new Date(t.startedAt) })),
        windowSeconds,
      );
      batch.forEach(([key, t], i) => {
        const state = states[i];
        t.unflushed -= t.sending;
        t.sending = 0;
        if (!state || tallies.get(key) !== t) return;
        t.shared = state.hits;
        t.startedAt = state.startedAt.getTime();
      });
    } catch (err) {
      // Kept for the next flush: a database hiccup delays sharing, it loses no count.
      for (const [, t] of batch) t.sending = 0;
      reportError(err);
    }
  }

  /** One flush at a time; a call during a flush waits for it and then flushes what is left. */
  function flush(): Promise<void> {
    const next = (flushing ?? Promise.resolve()).then(flushOnce);
    const mine = next.finally(() => {
      if (flushing === mine) flushing = null;
    });
    flushing = mine;
    return mine;
  }

  return {
    /**
     * Counts one request of `key` (a user or an address) in this node's tally and answers the
     * window's count as this node knows it. Synchronous: no request waits on the database.
     */
    hit(key: string, seconds: number): ThrottleState {
      windowSeconds = seconds;
      if (!timer && !closed) {
        timer = setInterval(() => void flush(), FLUSH_INTERVAL_MS);
        timer.unref();
      }
      const now = deps.clock.now().getTime();
      let tally = tallies.get(key);
      if (!tally || tally.startedAt + seconds * 1000 <= now) {
        tally = { startedAt: now, shared: 0, unflushed: 0, sending: 0 };
        tallies.set(key, tally);
      }
      tally.unflushed += 1;
      return { hits: tally.shared + tally.unflushed, retryAfterSeconds: (tally.startedAt + seconds * 1000 - now) / 1000 };
    },
    /** Adds this node's unflushed counts to the shared table and reads the totals back. */
    flush,
    /** Where a failed flush is reported (the server's log). */
    reportErrorsTo(report: (err: unknown) => void): void {
      reportError = report;
    },
    /** Stops the periodic flush after one last flush (the server's shutdown). */
    async close(): Promise<void> {
      closed = true;
      if (timer) clearInterval(timer);
      timer = null;
      await flush();
    },
  };
}

export type RequestRate = ReturnType<typeof createRequestRate>;
