import type { Db } from '../db/database.ts';
import type { Throttle, ThrottleState } from './throttle.ts';

/**
 * Request counts for the REST rate limits: the sign-in throttle's table and upsert, so every
 * node counts into the same fixed window with one statement per request.
 */
export function createRequestRate(deps: { db: Db; throttle: Throttle }) {
  return {
    /** Counts one request of `key` (a user or an address) and answers the window's count. */
    hit(key: string, windowSeconds: number): Promise<ThrottleState> {
      return deps.throttle.hit(deps.db, ['request-rate', key], windowSeconds);
    },
  };
}

export type RequestRate = ReturnType<typeof createRequestRate>;
