import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Unauthorized } from '../errors.ts';
import type { Caller, SessionExtra, Sessions } from '../services/auth/sessions.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Routes that need no bearer token (spec: Authentication rule 7). */
    public?: boolean;
    /** Facts the route answers from, selected with the session check (`principal.extra`). */
    sessionExtra?: SessionExtra;
  }
  interface FastifyRequest {
    /** Set by the session check: who is calling, and their organization seat as of this request. */
    principal: Caller | null;
  }
}

/** The authenticated caller; routes that are not public can rely on it. */
export function principalOf(request: FastifyRequest): Caller {
  if (!request.principal) throw new Unauthorized();
  return request.principal;
}

/**
 * Bearer tokens come from the Authorization header only: a token in a URL ends up in logs
 * and proxies, so a query-string token is never looked at. A refused request is first shown
 * to `beforeRefusing` (the per-address rate limit, which may answer 429 instead).
 */
export const authentication = fp(
  async (app: FastifyInstance, opts: { sessions: Sessions; beforeRefusing?: (request: FastifyRequest) => Promise<void> }) => {
    app.decorateRequest('principal', null);
    const refuse = async (request: FastifyRequest, err: unknown): Promise<never> => {
      await opts.beforeRefusing?.(request);
      throw err;
    };
    app.addHook('onRequest', async (request) => {
      if (request.is404 || request.routeOptions.config.public) return;
      const header = request.headers.authorization;
      const match = header ? /^Bearer\s+([A-Za-z0-9._~+/-]+=*)\s*$/i.exec(header) : null;
      if (!match?.[1]) return refuse(request, new Unauthorized('Missing bearer token', 'missing_token'));
      try {
        request.principal = await opts.sessions.authenticate(match[1], request.routeOptions.config.sessionExtra);
      } catch (err) {
        if (!(err instanceof Unauthorized)) throw err;
        await refuse(request, err);
      }
    });
  },
  { name: 'authentication' },
);
