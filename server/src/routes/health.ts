import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { errors } from '../http/reply.ts';

export interface HealthProbe {
  database(): Promise<void>;
  workerRunning(): boolean;
}

const healthBody = z.object({ status: z.boolean(), checks: z.record(z.string(), z.enum(['ok', 'failing', 'off'])) });

/** Outside the API prefix: load balancers and orchestrators call these. */
export const healthRoutes: FastifyPluginAsyncZod<{ probe: HealthProbe; workerExpected: boolean }> = async (app, { probe, workerExpected }) => {
  app.get('/healthz', {
    config: { public: true },
    schema: { tags: ['Health'], summary: 'The process is up', response: { 200: healthBody } },
    handler: async () => ({ status: true, checks: { process: 'ok' as const } }),
  });

  app.get('/readyz', {
    config: { public: true },
    schema: { tags: ['Health'], summary: 'Database reachable and worker running', response: { 200: healthBody, 503: healthBody, ...errors() } },
    handler: async (_req, reply) => {
      const database = await probe.database().then(
        () => 'ok' as const,
        () => 'failing' as const,
      );
      const worker = !workerExpected ? ('off' as const) : probe.workerRunning() ? ('ok' as const) : ('failing' as const);
      const ready = database === 'ok' && worker !== 'failing';
      return reply.code(ready ? 200 : 503).send({ status: ready, checks: { database, worker } });
    },
  });
};
