import { sql } from 'drizzle-orm';
import { rowsOf, type Db } from '../db/database.ts';
import type { Clock } from '../clock.ts';
import { sha256 } from '../security/random-tokens.ts';

export interface ThrottleState {
  readonly hits: number;
  readonly retryAfterSeconds: number;
}

/**
 * Fixed-window counters in the database, so every server node sees the same count. The
 * upsert is one statement: concurrent hits on one key cannot lose an increment.
 */
export function createThrottle(deps: { clock: Clock }) {
  const keyOf = (parts: readonly string[]) => sha256(parts.join('\u0000'));

  const state = (row: { hits: number; started: Date | string } | undefined, windowSeconds: number, now: Date) => {
    if (!row) return { hits: 0, retryAfterSeconds: 0 };
    const started = new Date(row.started).getTime();
    const retry = Math.max(0, (started + windowSeconds * 1000 - now.getTime()) / 1000);
    return retry === 0 ? { hits: 0, retryAfterSeconds: 0 } : { hits: Number(row.hits), retryAfterSeconds: retry };
  };

  return {
    /** Counts one hit and answers the count in the current window. */
    async hit(db: Db, parts: readonly string[], windowSeconds: number): Promise<ThrottleState> {
      const now = deps.clock.now();
      const key = keyOf(parts);
      const cutoff = new Date(now.getTime() - windowSeconds * 1000);
      const rows = await db.execute<{ hits: number; started: Date | string }>(sql`
        insert into throttles (key, hits, window_started_at, window_seconds)
        values (${key}, 1, ${now.toISOString()}::timestamptz, ${windowSeconds})
        on conflict (key) do update set
          hits = case when throttles.window_started_at <= ${cutoff.toISOString()}::timestamptz then 1 else throttles.hits + 1 end,
          window_started_at = case when throttles.window_started_at <= ${cutoff.toISOString()}::timestamptz
            then excluded.window_started_at else throttles.window_started_at end,
          window_seconds = excluded.window_seconds
        returning hits::int as hits, window_started_at as started`);
      return state(rowsOf<{ hits: number; started: Date | string }>(rows)[0], windowSeconds, now);
    },
    /**
     * Adds counts made elsewhere (a node's in-memory tally) to several keys in one statement
     * and answers each key's shared count and window start (a tally of 0 only reads it). A key whose stored window has
     * ended starts a new one at the tally's start;.
     */
    async addMany(
      db: Db,
      tallies: ReadonlyArray<{ readonly parts: readonly string[]; readonly hits: number; readonly startedAt: Date }>,
      windowSeconds: number,
    ): Promise<Array<ThrottleState & { readonly startedAt: Date }>> {
      const now = deps.clock.now();
      const cutoff = new Date(now.getTime() - windowSeconds * 1000).toISOString();
      const rows = tallies.map((t) => ({ key: keyOf(t.parts), hits: t.hits, started: t.startedAt.toISOString() }));
      if (rows.length === 0) return [];
      // A tally of 0 only reads the key's shared count (no row written for it).
      const result = await db.execute<{ key: string; hits: number; started: Date | string }>(sql`
        with x as (select * from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as x(key text, hits int, started timestamptz)),
        added as (
          insert into throttles (key, hits, window_started_at, window_seconds)
          select x.key, x.hits, x.started, ${windowSeconds} from x where x.hits > 0
          on conflict (key) do update set
            hits = case when throttles.window_started_at <= ${cutoff}::timestamptz then excluded.hits else throttles.hits + excluded.hits end,
            window_started_at = case when throttles.window_started_at <= ${cutoff}::timestamptz
              then excluded.window_started_at else throttles.window_started_at end,
            window_seconds = excluded.window_seconds
          returning key, hits, window_started_at)
        select key, hits::int as hits, window_started_at as started from added
        union all
        select t.key, t.hits::int, t.window_started_at from throttles t join x on x.key = t.key and x.hits = 0`);
      const byKey = new Map(rowsOf<{ key: string; hits: number; started: Date | string }>(result).map((r) => [r.key, r]));
      return rows.map((r) => {
        const row = byKey.get(r.key);
        return { ...state(row, windowSeconds, now), startedAt: row ? new Date(row.started) : new Date(r.started) };
      });
    },
    /** The count in the current window, without counting. */
    async peek(db: Db, parts: readonly string[], windowSeconds: number): Promise<ThrottleState> {
      const rows = await db.execute<{ hits: number; started: Date | string }>(
        sql`select hits::int as hits, window_started_at as started from throttles where key = ${keyOf(parts)}`,
      );
      return state(rowsOf<{ hits: number; started: Date | string }>(rows)[0], windowSeconds, deps.clock.now());
    },
    /** Gives back one hit counted by `hit` (an attempt that turned out not to count). */
    async release(db: Db, parts: readonly string[]): Promise<void> {
      await db.execute(sql`update throttles set hits = greatest(hits - 1, 0) where key = ${keyOf(parts)}`);
    },
    async clear(db: Db, parts: readonly string[]): Promise<void> {
      await db.execute(sql`delete from throttles where key = ${keyOf(parts)}`);
    },
  };
}

export type Throttle = ReturnType<typeof createThrottle>;
