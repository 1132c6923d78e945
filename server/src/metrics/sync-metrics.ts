import type { BatchOutcome } from '../services/sync/mutation-ledger.ts';

/**
 * What the sync hub reports to /metrics. The hub is handed one (or none) and feeds it at a
 * few points; it knows nothing of Prometheus. Kept free of prom-client so the hub's imports
 * stay light.
 */
export interface SyncMetrics {
  /** Called once by the hub with its live figures, read at scrape time. */
  observe(figures: { sockets(): number; queueDepth(): number }): void;
  /** A mutation judged: applied, refused (validation, conflict, not found), or parked as failed. */
  mutation(name: string, outcome: 'applied' | 'refused' | 'failed'): void;
  /**
   * One change-feed read (the database's time, and the building of its changes as they stream)
   * and how many changes it found: the full diff, a poked tables' diff, or a tables' diff that
   * declined (the full diff follows it).
   */
  feedRead(seconds: number, changes: number, read: FeedRead): void;
}

export type FeedRead = 'full' | 'tables' | 'declined';

/**
 * The batch applier, counting each mutation by name and outcome once its transaction has
 * committed: counted in the runner, a set lost and applied again one by one (or a transaction
 * that failed after its mutations ran) was counted twice.
 */
export function meterBatches<A extends unknown[]>(
  apply: (...args: A) => Promise<BatchOutcome>,
  metrics: SyncMetrics | undefined,
): (...args: A) => Promise<BatchOutcome> {
  if (!metrics) return apply;
  return async (...args) => {
    const outcome = await apply(...args);
    if (outcome.kind === 'applied') for (const m of outcome.judged) metrics.mutation(m.name, m.outcome);
    return outcome;
  };
}

/**
 * A feed read, timed: database time and how many changes it found (counted without parsing
 * them). `kind`: the full diff, or a tables' diff — which answers null when it declines.
 */
export function meterFeed<A extends unknown[], R extends { readonly count: number } | null>(
  kind: 'full' | 'tables',
  read: (...args: A) => Promise<R>,
  metrics: SyncMetrics | undefined,
): (...args: A) => Promise<R> {
  if (!metrics) return read;
  return async (...args) => {
    const started = process.hrtime.bigint();
    const result = await read(...args);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    metrics.feedRead(seconds, result?.count ?? 0, result ? kind : 'declined');
    return result;
  };
}
