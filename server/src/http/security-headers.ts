import type { FastifyInstance } from 'fastify';
import cors from '@fastify/cors';
import helmet from '@fastify/helmet';
import fp from 'fastify-plugin';

export interface SecurityHeadersOptions {
  /** Browser origins allowed to call the API (exact `scheme://host[:port]`); empty: none. */
  readonly corsOrigins: readonly string[];
  /** Send Strict-Transport-Security: the server terminates TLS, or APP_URL is https. */
  readonly hsts: boolean;
}

/** One year, the HSTS preload list's minimum. */
const HSTS_MAX_AGE_SECONDS = 365 * 24 * 3600;

/**
 * Paths whose answers may be cached: the documentation UI's assets, which carry no PHI. Every
 * other answer — API, health, errors, 404s — is `no-store`, so a route added later is never
 * cached by a shared proxy or the device's HTTP cache by forgetting a header.
 */
export function cacheable(path: string): boolean {
  return path === '/docs' || path.startsWith('/docs/');
}

/** Headers the API sends back that a browser client needs to read. */
const EXPOSED_HEADERS = ['retry-after', 'idempotent-replayed', 'content-range', 'accept-ranges', 'content-disposition', 'location', 'upload-offset', 'upload-length', 'tus-resumable'];

/**
 * Response headers of every answer: helmet's defaults (nosniff, frame and referrer policies,
 * no `x-powered-by`), a CSP that lets a JSON answer run nothing, HSTS when served over TLS,
 * `Cache-Control: no-store` outside the documentation UI, and CORS only for configured origins.
 */
export const securityHeaders = fp<SecurityHeadersOptions>(
  async (app: FastifyInstance, opts) => {
    await app.register(helmet, {
      // The API answers JSON and audio; nothing it serves should run or be framed. The docs UI
      // sets its own policy (swagger-ui's staticCSP) over this one.
      contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
      hsts: opts.hsts ? { maxAge: HSTS_MAX_AGE_SECONDS, includeSubDomains: true } : false,
    });

    const allowed = new Set(opts.corsOrigins);
    await app.register(cors, {
      // An origin not on the list gets no CORS headers, and its preflight the 404 of an unknown
      // route: the browser refuses the call. Native apps send no Origin and are unaffected.
      origin: (origin, cb) => cb(null, origin !== undefined && allowed.has(origin) ? origin : false),
      methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
      exposedHeaders: EXPOSED_HEADERS,
      maxAge: 600,
      // Bearer tokens travel in a header, not cookies.
      credentials: false,
    });

    app.addHook('onSend', async (request, reply, payload) => {
      if (!cacheable(request.url.split('?')[0] ?? '')) reply.header('cache-control', 'no-store');
      return payload;
    });
  },
  { name: 'security-headers' },
);
