import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import fp from 'fastify-plugin';
import { isDatabaseUnreachable } from '../db/reachability.ts';
import { Invalid } from '../errors.ts';
import { safeError } from '../log-safety.ts';
import type { UnitOfWork } from '../db/unit-of-work.ts';
import type { Idempotency } from '../services/idempotency.ts';

/** Hands the serialised answer to the handler's transaction, and waits for it to commit. */
interface Capture {
  readonly payload: Promise<string>;
  give(payload: string): void;
  readonly committed: Promise<void>;
  settle(err: unknown): void;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * A write that creates records under ids the server chooses: with an Idempotency-Key,
     * its stored answer commits in the write's own transaction, so a retry after a crash
     * between the two cannot write it twice. `lazy` for handlers whose writes are one
     * transaction of their own (it becomes the request's, and holds nothing while an upload
     * streams); `eager` for a write made of single statements. Only for handlers that record
     * nothing before refusing (no attempt counters or throttles): a refusal rolls back.
     */
    idempotentWrite?: 'lazy' | 'eager';
    /**
     * A write that stores the same thing however often it runs with the same body (timer
     * events are the same event by type and time, mileage is last-writer-wins by its
     * `recorded_at`, a visit has one note): with an Idempotency-Key, a retry takes over a claim
     * a crashed request left unfinished and runs again at once, rather than answering 409
     * until the claim counts as abandoned. Its answer is stored after it, as on any route.
     */
    repeatableWrite?: true;
  }
  interface FastifyRequest {
    idempotency: { scope: string; key: string } | null;
    idempotencyCapture: Capture | null;
  }
}

function capture(): Capture {
  let give: (payload: string) => void = () => {};
  let settle: (err: unknown) => void = () => {};
  const payload = new Promise<string>((r) => (give = r));
  const committed = new Promise<void>((resolve, reject) => (settle = (err) => (err === null ? resolve() : reject(err))));
  committed.catch(() => {});
  return { payload, give, committed, settle };
}

const KEY = /^[\x21-\x7e]{1,255}$/;

function scopeOf(request: FastifyRequest): string {
  // Unauthenticated endpoints share one scope per route: clients generate random keys, and a
  // device that changed networks mid-retry still has to be recognised.
  return request.principal ? `user:${request.principal.userId}` : `anon:${request.method} ${request.routeOptions.url}`;
}

/** Replays the first response to a repeated POST/PUT carrying the same Idempotency-Key. */
export const idempotency = fp(
  async (app: FastifyInstance, opts: { idempotency: Idempotency; unitOfWork: UnitOfWork }) => {
    app.decorateRequest('idempotency', null);
    app.decorateRequest('idempotencyCapture', null);
    // A keyed create and its stored answer commit in one transaction: a server killed between
    // the two can no longer leave a committed write under an unfinished claim, which a retry
    // after the claim was abandoned would have written a second time. Other routes keep the
    // separate answer: a request-wide transaction would roll back what they record before
    // refusing (a one-time code's burned attempt, a throttle's count).
    app.addHook('onRoute', (route) => {
      const mode = route.config?.idempotentWrite;
      if (!mode) return;
      const eager = mode === 'eager';
      const handler = route.handler;
      route.handler = async function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
        const claim = request.idempotency;
        if (!claim) return handler.call(this, request, reply);
        const answer = capture();
        request.idempotencyCapture = answer;
        try {
          await opts.unitOfWork.request(async () => {
            const result: unknown = await handler.call(this, request, reply);
            // A hijacked reply (the tus upload) answers on its own, past every hook.
            if (reply.sent) return;
            if (result !== reply && result !== undefined) void reply.send(result);
            const payload = await answer.payload;
            await opts.idempotency.completeInTransaction(claim.scope, claim.key, reply.statusCode, payload);
          }, { eager });
        } catch (err) {
          if (request.idempotencyCapture === answer) {
            // Nothing was sent yet: the error takes the usual path (its answer is stored, or a
            // 5xx releases the key), and the rolled-back write is as if never tried.
            request.idempotencyCapture = null;
            throw err;
          }
          answer.settle(err);
          return reply;
        }
        answer.settle(null);
        return reply;
      } as RouteHandlerMethod;
    });
    app.addHook('preHandler', async (request, reply) => {
      if (request.method !== 'POST' && request.method !== 'PUT') return;
      const key = request.headers['idempotency-key'];
      if (key === undefined) return;
      if (typeof key !== 'string' || !KEY.test(key)) {
        throw Invalid.field('Idempotency-Key', 'must be 1–255 visible ASCII characters', 'invalid_idempotency_key');
      }
      const scope = scopeOf(request);
      const hash = opts.idempotency.requestHash(request.method, request.url, request.body);
      // A write that commits its answer with it, or stores nothing twice, may take over a claim
      // a cut request left.
      const config = request.routeOptions.config;
      const claim = await opts.idempotency.claim(scope, key, hash, { takeOver: Boolean(config?.idempotentWrite || config?.repeatableWrite) });
      if (claim.kind === 'replay') {
        return reply
          .code(claim.statusCode)
          .header('idempotent-replayed', 'true')
          .type('application/json; charset=utf-8')
          .send(claim.body);
      }
      request.idempotency = { scope, key };
    });
    app.addHook('onSend', async (request, reply, payload) => {
      const answer = request.idempotencyCapture;
      if (answer) {
        request.idempotencyCapture = null;
        answer.give(typeof payload === 'string' ? payload : '');
        // A failed commit rejects here: the error's own answer (503 when the database is
        // away) replaces this one, and the key is released with it.
        await answer.committed;
        request.idempotency = null;
        return payload;
      }
      if (!request.idempotency) return payload;
      const { scope, key } = request.idempotency;
      request.idempotency = null;
      try {
        await opts.idempotency.complete(scope, key, reply.statusCode, typeof payload === 'string' ? payload : '');
      } catch (err) {
        // The database went away after the handler answered. The answer stands: a 2xx write
        // is committed (a retry meets the unfinished claim, 409, rather than a second write),
        // and a 503 stays a 503 (its claim is released as abandoned later). Throwing here
        // would turn either into a 500 carrying the failed query's text.
        if (!isDatabaseUnreachable(err)) throw err;
        request.log.warn({ err: safeError(err), statusCode: reply.statusCode }, 'idempotency key not recorded: database unreachable');
      }
      return payload;
    });
  },
  { name: 'idempotency', dependencies: ['authentication'] },
);
