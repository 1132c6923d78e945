import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import { rowsOf, type Db } from '../db/database.ts';
import type { SyncMetrics } from './sync-metrics.ts';

/** Request durations, in seconds: API answers are mostly milliseconds, audio uploads seconds. */
const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const FEED_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export interface Metrics {
  readonly registry: Registry;
  readonly sync: SyncMetrics;
  /** One answered HTTP request: `route` is the route's pattern (never the raw URL: ids are not labels). */
  request(method: string, route: string, status: number, seconds: number): void;
  /** The job queue's connection pool, once it exists (runtime.ts opens it after the app). */
  watchJobPool(pool: pg.Pool): void;
  /** The Prometheus text of every figure. */
  render(): Promise<string>;
}

/**
 * The figures of /metrics (docs/operations.md#metrics), in a registry of their own (not
 * prom-client's global one: tests start several servers in one process).
 */
export function createMetrics(deps: { db: Db; appPoolMax: number | null }): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'fieldchart_' });

  const requests = new Counter({
    name: 'fieldchart_http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const durations = new Histogram({
    name: 'fieldchart_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: HTTP_BUCKETS,
    registers: [registry],
  });

  let hub: { sockets(): number; queueDepth(): number } | null = null;
  new Gauge({
    name: 'fieldchart_sync_sockets',
    help: 'Sync websockets open on this node (past their hello)',
    registers: [registry],
    collect() {
      this.set(hub?.sockets() ?? 0);
    },
  });
  new Gauge({
    name: 'fieldchart_sync_queue_depth',
    help: 'Sync messages received on this node and not handled yet, over all sockets',
    registers: [registry],
    collect() {
      this.set(hub?.queueDepth() ?? 0);
    },
  });
  const mutations = new Counter({
    name: 'fieldchart_sync_mutations_total',
    help: 'Sync mutations judged (websocket and HTTP fallback), by mutation name and outcome (applied, refused, failed: parked after repeated unexpected errors), counted once committed; rate() gives the mutation rate',
    labelNames: ['name', 'outcome'] as const,
    registers: [registry],
  });
  const feedReads = new Histogram({
    name: 'fieldchart_sync_feed_read_seconds',
    help: 'Time to read one change feed from the database, by read: full (every synced table), tables (only the tables a poke named), declined (a tables read that found only the full diff could answer; one follows)',
    labelNames: ['read'] as const,
    buckets: FEED_BUCKETS,
    registers: [registry],
  });
  const feedChanges = new Counter({ name: 'fieldchart_sync_feed_changes_total', help: 'Changes sent by the change feed', registers: [registry] });

  new Gauge({
    name: 'fieldchart_jobs',
    help: 'Background jobs by state: queued (waiting to run, retries included), running (locked by a worker), failed (out of attempts)',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      const [row] = rowsOf<{ queued: number; running: number; failed: number }>(
        await deps.db.execute(sql`
          select cast(count(*) filter (where locked_at is null and attempts < max_attempts) as int) as queued,
                 cast(count(*) filter (where locked_at is not null) as int) as running,
                 cast(count(*) filter (where locked_at is null and attempts >= max_attempts) as int) as failed
            from graphile_worker._private_jobs`),
      );
      this.set({ state: 'queued' }, row?.queued ?? 0);
      this.set({ state: 'running' }, row?.running ?? 0);
      this.set({ state: 'failed' }, row?.failed ?? 0);
    },
  });

  let jobPool: pg.Pool | null = null;
  new Gauge({
    name: 'fieldchart_db_pool_connections',
    help: 'Database connections by pool and state: the job queue pool (pg) reports total, idle and waiting clients; the API pool (postgres.js) its configured maximum',
    labelNames: ['pool', 'state'] as const,
    registers: [registry],
    collect() {
      if (deps.appPoolMax !== null) this.set({ pool: 'api', state: 'max' }, deps.appPoolMax);
      if (jobPool) {
        this.set({ pool: 'jobs', state: 'total' }, jobPool.totalCount);
        this.set({ pool: 'jobs', state: 'idle' }, jobPool.idleCount);
        this.set({ pool: 'jobs', state: 'waiting' }, jobPool.waitingCount);
      }
    },
  });

  return {
    registry,
    sync: {
      observe(figures) {
        hub = figures;
      },
      mutation(name, outcome) {
        mutations.inc({ name, outcome });
      },
      feedRead(seconds, changes, read) {
        feedReads.observe({ read }, seconds);
        feedChanges.inc(changes);
      },
    },
    request(method, route, status, seconds) {
      const labels = { method, route, status: String(status) };
      requests.inc(labels);
      durations.observe(labels, seconds);
    },
    watchJobPool(pool) {
      jobPool = pool;
    },
    render: () => registry.metrics(),
  };
}
