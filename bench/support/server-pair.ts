/**
 * The set-up both bench server processes share: the backend (PGlite, or PostgreSQL when
 * BENCH_DATABASE_URL is set: a throwaway database created from it and dropped afterwards), a
 * bare Fastify server with one trivial JSON route, and a real Fieldchart server started
 * exactly as the test suite starts it (test/helpers/test-server.ts). Both listen on
 * 127.0.0.1 only. `stop` closes both and disconnects from the parent; it runs on `'stop'` or
 * when the parent goes away.
 */
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import type { BackendName } from '../../test/helpers/backends.ts';
import type { startTestServer as StartTestServer, TestServer } from '../../test/helpers/test-server.ts';

const UNREACHABLE_RATE_LIMITS = { RATE_LIMIT_PER_USER_PER_MINUTE: '1000000000', RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '1000000000' };

export interface ServerPair {
  readonly backend: BackendName;
  /** Origin of the bare Fastify server (GET /ping). */
  readonly bareUrl: string;
  readonly server: TestServer;
  stop(): Promise<void>;
}

export async function startServerPair(opts: Parameters<typeof StartTestServer>[1] = {}): Promise<ServerPair> {
  // backends.ts decides at import which backends exist, from TEST_DATABASE_URL.
  const pgUrl = process.env.BENCH_DATABASE_URL;
  if (pgUrl) process.env.TEST_DATABASE_URL = pgUrl;
  const { backends } = await import('../../test/helpers/backends.ts');
  const { startTestServer } = await import('../../test/helpers/test-server.ts');

  const backend = backends.find((b) => b.name === (pgUrl ? 'postgres' : 'pglite'));
  if (!backend) throw new Error('backend not available');

  const bare = Fastify({ logger: false });
  bare.get('/ping', async () => ({ status: true, data: { pong: true } }));
  await bare.listen({ host: '127.0.0.1', port: 0 });

  // A bench sends thousands of requests a second from one user and one address: the rate
  // limits are raised out of reach, so every request is still counted (the production path
  // is measured) but none is refused. A bench may pass its own values.
  const server = await startTestServer(backend, { ...opts, env: { ...UNREACHABLE_RATE_LIMITS, ...opts.env } });
  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      await server.close().catch((err: Error) => console.error(`closing the server: ${err.message}`));
      await bare.close();
      process.disconnect?.();
    })());
  process.on('message', (m) => m === 'stop' && void stop());
  process.on('disconnect', () => void stop());

  return { backend: backend.name, bareUrl: `http://127.0.0.1:${(bare.server.address() as AddressInfo).port}`, server, stop };
}

/**
 * The demo clinician (`fieldchart seed --demo`) seeded on the pair's server and signed in: what
 * every REST bench starts from. A failed set-up stops the pair.
 */
export async function signedInDemo(pair: Pick<ServerPair, 'server' | 'stop'>): Promise<{ email: string; password: string; time_zone: string; visits: { total: number; today: number }; token: string }> {
  const { server } = pair;
  // Imported here, after the pair has set TEST_DATABASE_URL.
  const { operationContext, runOperation } = await import('@fieldchart/server');
  const seeded = (await runOperation(operationContext(server.runtime.services, server.runtime.database), 'seed.demo', {})) as {
    email: string;
    password: string;
    time_zone: string;
    visits: { total: number; today: number };
  };
  const signIn = await server.api('POST', '/sign-in', { body: { email: seeded.email, password: seeded.password } });
  const token = signIn.body?.data?.token as string | undefined;
  if (token) return { ...seeded, token };
  await pair.stop();
  throw new Error(`demo set-up failed: sign-in ${signIn.status}`);
}
