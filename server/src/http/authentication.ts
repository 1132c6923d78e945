import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Unauthorized } from '../errors.ts';
import type { Principal, Sessions } from '../services/auth/sessions.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Routes that need no bearer token (spec: Authentication rule 7). */
    public?: boolean;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

/** The authenticated caller; routes that are not public can rely on it. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new Unauthorized();
  return request.principal;
}

/**
 * Bearer tokens come from the Authorization header only: a token in a URL ends up in logs
 * and proxies, so a query-string token is never looked at.
 */
export const authentication = fp(
  async (app: FastifyInstance, opts: { sessions: Sessions }) => {
    app.decorateRequest('principal', null);
    app.addHook('onRequest', async (request) => {
      if (request.is404 || request.routeOptions.config.public) return;
      const header = request.headers.authorization;
      const match = header ? /^Bearer\s+([A-Za-z0-9._~+/-]+=*)\s*$/i.exec(header) : null;
      if (!match?.[1]) throw new Unauthorized('Missing bearer token', 'missing_token');
      request.principal = await opts.sessions.authenticate(match[1]);
    });
  },
  { name: 'authentication' },
);
