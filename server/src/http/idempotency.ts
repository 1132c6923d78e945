import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { isDatabaseUnreachable } from '../db/reachability.ts';
import { Invalid } from '../errors.ts';
import { safeError } from '../log-safety.ts';
import type { Idempotency } from '../services/idempotency.ts';

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: { scope: string; key: string } | null;
  }
}

const KEY = /^[\x21-\x7e]{1,255}$/;

function scopeOf(request: FastifyRequest): string {
  // Unauthenticated endpoints share one scope per route: clients generate random keys, and a
  // device that changed networks mid-retry still has to be recognised.
  return request.principal ? `user:${request.principal.userId}` : `anon:${request.method} ${request.routeOptions.url}`;
}

/** Replays the first response to a repeated POST/PUT carrying the same Idempotency-Key. */
export const idempotency = fp(
  async (app: FastifyInstance, opts: { idempotency: Idempotency }) => {
    app.decorateRequest('idempotency', null);
    app.addHook('preHandler', async (request, reply) => {
      if (request.method !== 'POST' && request.method !== 'PUT') return;
      const key = request.headers['idempotency-key'];
      if (key === undefined) return;
      if (typeof key !== 'string' || !KEY.test(key)) {
        throw Invalid.field('Idempotency-Key', 'must be 1–255 visible ASCII characters', 'invalid_idempotency_key');
      }
      const scope = scopeOf(request);
      const hash = opts.idempotency.requestHash(request.method, request.url, request.body);
      const claim = await opts.idempotency.claim(scope, key, hash);
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
