import type { FastifyInstance, FastifyRequest } from 'fastify';
import fastifyRateLimit, { normalizeIP, type FastifyRateLimitStore } from '@fastify/rate-limit';
import fp from 'fastify-plugin';
import { TooMany } from '../errors.ts';
import type { RequestRate } from '../services/request-rate.ts';

const WINDOW_MS = 60_000;

export interface RequestRateLimits {
  /** Requests per minute of one signed-in user; 0: off. */
  readonly perUser: number;
  /** Requests per minute of one client address without a valid token; 0: off. */
  readonly perAddress: number;
}

/**
 * The rate limiter's key: the signed-in user, else the client address (an IPv6 address by
 * its /64, which one subscriber holds). Runs after authentication, so `principal` is set
 * for every request that carries a valid token.
 */
function keyOf(request: FastifyRequest): string {
  return request.principal ? `user:${request.principal.userId}` : `address:${normalizeIP(request.ip, 64)}`;
}

const isUserKey = (key: string) => key.startsWith('user:');

/**
 * @fastify/rate-limit's store contract over the node's in-memory tally, which is shared with
 * every other node by periodic flushes into the database (services/request-rate.ts): counting
 * answers at once, so no request waits on a statement.
 */
function sharedTallyStore(rate: RequestRate): new () => FastifyRateLimitStore {
  class SharedTallyStore implements FastifyRateLimitStore {
    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number): void {
      const state = rate.hit(key, timeWindow / 1000);
      callback(null, { current: state.hits, ttl: Math.max(1, Math.ceil(state.retryAfterSeconds * 1000)) });
    }
    child(): FastifyRateLimitStore {
      return this;
    }
  }
  return SharedTallyStore;
}

/**
 * Per-user and per-address request limits on the REST API (fixed one-minute windows). Each
 * route gets the check as a route-level onRequest hook, which runs after the scope's
 * authentication hook; a request refused by authentication is counted against its address
 * through `refuseIfOverAddressLimit` before its 401 goes out. Over the limit: 429
 * `too_many_requests` with Retry-After (the error handler's shape).
 */
export const requestRateLimit = fp(
  async (app: FastifyInstance, opts: { rate: RequestRate; limits: RequestRateLimits }) => {
    const { perUser, perAddress } = opts.limits;
    // The error's class only: a flush's parameters hold user ids and client addresses.
    opts.rate.reportErrorsTo((err) => app.log.warn({ error: err instanceof Error ? err.name : 'unknown' }, 'request counts not shared this time; kept for the next flush'));
    // The last counts reach the shared table before the server stops.
    app.addHook('onClose', async () => opts.rate.close());
    await app.register(fastifyRateLimit, {
      global: true,
      hook: 'onRequest',
      timeWindow: WINDOW_MS,
      keyGenerator: keyOf,
      max: (_request, key) => (isUserKey(key) ? perUser : perAddress),
      // A limit of 0 turns that kind of key off before anything is counted.
      allowList: (_request, key) => (isUserKey(key) ? perUser : perAddress) === 0,
      store: sharedTallyStore(opts.rate),
      errorResponseBuilder: (_request, context) =>
        new TooMany('Too many requests; slow down and retry later', context.ttl / 1000, 'too_many_requests'),
    });
  },
  { name: 'request-rate-limit', dependencies: ['authentication'] },
);

/**
 * For authentication's refusals: counts the request against its address and throws the 429
 * when that address is over its limit (otherwise the caller's 401 goes out).
 */
export function addressLimitCheck(app: FastifyInstance): (request: FastifyRequest) => Promise<void> {
  let check: ReturnType<FastifyInstance['createRateLimit']> | null = null;
  return async (request) => {
    check ??= app.createRateLimit();
    const result = await check(request);
    if (!result.isAllowed && result.isExceeded) {
      throw new TooMany('Too many requests; slow down and retry later', result.ttlInSeconds, 'too_many_requests');
    }
  };
}
