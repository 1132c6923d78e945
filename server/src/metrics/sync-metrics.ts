import type { MutationRunner } from '../services/sync/mutation-runner.ts';
import type { MutationSetRunner } from '../services/sync/mutation-sets.ts';

/**
 * What the sync hub reports to /metrics. The hub is handed one (or none) and feeds it at a
 * few points; it knows nothing of Prometheus. Kept free of prom-client so the hub's imports
 * stay light.
 */
export interface SyncMetrics {
  /** Called once by the hub with its live figures, read at scrape time. */
  observe(figures: { sockets(): number; queueDepth(): number }): void;
  /** A mutation judged: applied, or refused (validation, conflict, not found). */
  mutation(name: string, outcome: 'applied' | 'refused'): void;
  /** One change-feed read (database time), and how many changes it found. */
  feedRead(seconds: number, changes: number): void;
}

/** The runner, counting each mutation by name and outcome, one by one or in a set. */
export function meterMutations(runner: MutationRunner, metrics: SyncMetrics | undefined): MutationRunner {
  if (!metrics) return runner;
  const one: MutationRunner = async (ctx, name, args) => {
    try {
      const result = await runner(ctx, name, args);
      metrics.mutation(name, 'applied');
      return result;
    } catch (err) {
      metrics.mutation(name, 'refused');
      throw err;
    }
  };
  const { runSet } = runner;
  if (!runSet) return one;
  // A set that comes back null, or whose writes fail, is applied again one by one (and counted there).
  const set: MutationSetRunner = async (ctx, mutations) => {
    const plan = await runSet(ctx, mutations);
    if (!plan) return null;
    return {
      results: plan.results,
      async write() {
        await plan.write();
        for (const m of mutations) metrics.mutation(m.name, 'applied');
      },
    };
  };
  return Object.assign(one, { runSet: set });
}

/** A feed read, timed: database time and how many changes it found (counted without parsing them). */
export function meterFeed<A extends unknown[], R extends { readonly serialized: readonly string[] }>(
  read: (...args: A) => Promise<R>,
  metrics: SyncMetrics | undefined,
): (...args: A) => Promise<R> {
  if (!metrics) return read;
  return async (...args) => {
    const started = process.hrtime.bigint();
    const result = await read(...args);
    metrics.feedRead(Number(process.hrtime.bigint() - started) / 1e9, result.serialized.length);
    return result;
  };
}
