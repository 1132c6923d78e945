/**
 * While PostgreSQL is away, API requests answer 503 `database_unavailable` at once instead of
 * waiting on a pool that cannot connect.
 *
 * The gate learns the database is away in two ways, and always confirms it with a probe on a
 * fresh connection (db/reachability.ts) so that one dropped connection or one slow request
 * never shuts the API: an error the handler mapped to 503 (a lost connection), or a request
 * still unanswered after `suspectAfterMs` (postgres.js keeps a query that has not got its
 * first connection retrying, so without this it would hang until the database is back). Such
 * a request is answered 503 when the probe fails; a merely slow one is left alone, and looked at
 * again every `suspectAfterMs` while it stays unanswered: a probe that answered "reachable" may
 * have been opened just before the database went (it is shared, and takes up to seconds on a
 * loaded machine), and one such answer must not leave a request waiting for the whole outage. While away,
 * a probe runs every `recheckMs` and the gate opens again as soon as one succeeds: recovery
 * needs no restart.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { DatabaseUnavailable } from '../errors.ts';
import { isDatabaseUnreachable } from '../db/reachability.ts';

export interface DatabaseGateOptions {
  /** Resolves when the database answers, rejects (within its own bound) when it does not. */
  readonly probe: () => Promise<void>;
  readonly suspectAfterMs?: number;
  /**
   * A request still unanswered this long while the database answers is logged once (method,
   * route pattern, elapsed; never the URL's values): a slow request, or one stuck somewhere
   * this gate cannot see.
   */
  readonly reportAfterMs?: number;
  readonly recheckMs?: number;
}

declare module 'fastify' {
  interface FastifyRequest {
    databaseGateTimer?: NodeJS.Timeout;
  }
}

const gate: FastifyPluginAsync<DatabaseGateOptions> = async (app, opts) => {
  const suspectAfterMs = opts.suspectAfterMs ?? 2500;
  const reportAfterMs = opts.reportAfterMs ?? 10_000;
  const recheckMs = opts.recheckMs ?? 500;
  let away = false;
  let probing: Promise<boolean> | null = null;
  /** The last probe that answered: when it started, and what it said. */
  let last: { startedAt: number; reachable: boolean } | null = null;
  let recheck: NodeJS.Timeout | null = null;
  let closed = false;

  /**
   * One probe at a time; answers whether the database is reachable and updates the state. With
   * `since`, an answer of a probe started at or after it is taken as it is: slow requests looking
   * again every `suspectAfterMs` (uploads over a poor network) share one probe per period
   * instead of opening a connection each.
   */
  function probe(since?: number): Promise<boolean> {
    if (!probing && since !== undefined && last && last.startedAt >= since) return Promise.resolve(last.reachable);
    const startedAt = performance.now();
    probing ??= opts
      .probe()
      .then(
        () => true,
        () => false,
      )
      .then((reachable) => {
        probing = null;
        last = { startedAt, reachable };
        if (reachable && away) app.log.warn('database reachable again');
        if (!reachable && !away) app.log.error('database unreachable: answering 503 until it is back');
        away = !reachable;
        if (away && !closed && !recheck) {
          recheck = setTimeout(() => {
            recheck = null;
            void probe();
          }, recheckMs);
          recheck.unref();
        }
        return reachable;
      });
    return probing;
  }

  app.decorateRequest('databaseGateTimer', undefined);

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (away) throw new DatabaseUnavailable();
    // Each look takes only a probe started after the last answer it had (the first: after the
    // request came), so an answer from before an outage holds a request one period at most.
    const came = performance.now();
    let reported = false;
    const watch = (since: number) => {
      const timer = setTimeout(() => {
        void probe(since).then((reachable) => {
          if (reply.sent || request.databaseGateTimer !== timer) return;
          if (!reachable) return void reply.send(new DatabaseUnavailable());
          const elapsedMs = Math.round(performance.now() - came);
          if (!reported && elapsedMs >= reportAfterMs) {
            reported = true;
            request.log.warn({ method: request.method, route: request.routeOptions.url ?? 'unmatched', elapsed_ms: elapsedMs }, 'request still unanswered while the database answers');
          }
          watch(performance.now());
        });
      }, suspectAfterMs);
      timer.unref();
      request.databaseGateTimer = timer;
    };
    watch(came);
  });
  const clear = async (request: FastifyRequest) => {
    clearTimeout(request.databaseGateTimer);
    request.databaseGateTimer = undefined;
  };
  app.addHook('onResponse', clear);
  app.addHook('onRequestAbort', clear);
  // Runs after the error handler answered: a lost connection there makes the gate look.
  app.addHook('onError', async (_request, _reply, err) => {
    if (isDatabaseUnreachable(err)) void probe();
  });
  app.addHook('onClose', async () => {
    closed = true;
    if (recheck) clearTimeout(recheck);
  });
};

export const databaseGate = fp(gate, { name: 'database-gate' });
