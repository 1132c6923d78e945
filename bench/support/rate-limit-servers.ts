/**
 * Two Fieldchart servers for the rate-limit bench, in a process of their own, on the same
 * backend (each its own database): one with the REST rate limits on (raised out of reach, so
 * every request is counted and none refused) and one with them off, plus the bare route.
 * Protocol as bench-servers.ts.
 */
import { startServerPair } from './server-pair.ts';

export interface RateLimitServers {
  readonly backend: 'pglite' | 'postgres';
  readonly bareUrl: string;
  readonly apiPrefix: string;
  /** Origin and bearer token of each server. */
  readonly limited: { readonly origin: string; readonly token: string };
  readonly unlimited: { readonly origin: string; readonly token: string };
}

if (!process.send) throw new Error('rate-limit-servers runs as a child process of a bench script');

const pair = await startServerPair();
const { API, newAccount, startTestServer } = await import('../../test/helpers/test-server.ts');
const { backends } = await import('../../test/helpers/backends.ts');
const backend = backends.find((b) => b.name === pair.backend);
if (!backend) throw new Error('backend not available');
const unlimited = await startTestServer(backend, { env: { RATE_LIMIT_PER_USER_PER_MINUTE: '0', RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '0' } });
process.on('disconnect', () => void unlimited.close());
process.on('message', (m) => m === 'stop' && void unlimited.close());

async function tokenOf(server: typeof unlimited): Promise<string> {
  const res = await server.api('POST', '/register', { body: newAccount() });
  if (res.status !== 200) throw new Error(`register failed: ${res.status}`);
  return res.body.data.token as string;
}

const ready: RateLimitServers = {
  backend: pair.backend,
  bareUrl: pair.bareUrl,
  apiPrefix: API,
  limited: { origin: pair.server.url, token: await tokenOf(pair.server) },
  unlimited: { origin: unlimited.url, token: await tokenOf(unlimited) },
};
process.send({ ready });
