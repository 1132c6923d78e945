import { timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Unauthorized } from '../errors.ts';
import type { Metrics } from './metrics.ts';

const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

function sameToken(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Counts and times every answered request by route pattern, and — with METRICS_TOKEN — serves
 * GET /metrics on the API's own port to a bearer of that token.
 */
export const metricsPlugin = fp<{ metrics: Metrics; token: string | null }>(
  async (app: FastifyInstance, { metrics, token }) => {
    app.addHook('onResponse', async (request, reply) => {
      metrics.request(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    });
    if (token === null) return;
    app.get('/metrics', { config: { public: true }, schema: { hide: true } }, async (request, reply) => {
      const header = request.headers.authorization ?? '';
      const given = header.startsWith('Bearer ') ? header.slice('Bearer '.length) : '';
      if (!sameToken(given, token)) throw new Unauthorized('A valid metrics token is required', 'invalid_token');
      return reply.type(CONTENT_TYPE).send(await metrics.render());
    });
  },
  { name: 'metrics' },
);

/**
 * METRICS_PORT: /metrics on an address of its own (default loopback), for a scraper on the
 * same host or an admin network; no token, so never bind it where clients reach.
 */
export async function startMetricsListener(metrics: Metrics, host: string, port: number): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found\n');
      return;
    }
    metrics.render().then(
      (text) => res.writeHead(200, { 'content-type': CONTENT_TYPE, 'cache-control': 'no-store' }).end(text),
      () => res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics unavailable\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as { port: number };
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
