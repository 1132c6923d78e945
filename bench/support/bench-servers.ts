/**
 * The servers under load, in a process of their own so that the load generator does not
 * share their event loop: a bare Fastify server with one trivial JSON route, and a real
 * Fieldchart server started exactly as the test suite starts it (test/helpers/test-server.ts)
 * on PGlite, or on PostgreSQL when BENCH_DATABASE_URL is set (a throwaway database created
 * from it and dropped afterwards). Both listen on 127.0.0.1 only.
 *
 * Protocol (IPC): sends `{ ready: BenchServers }` once listening; on `'stop'`, or when the
 * parent goes away, closes everything and exits.
 */
import { startServerPair } from './server-pair.ts';

export interface BenchServers {
  readonly backend: 'pglite' | 'postgres';
  readonly bareUrl: string;
  /** Origin of the Fieldchart server. */
  readonly apiOrigin: string;
  readonly apiPrefix: string;
  /** A registered account and a bearer token for it. */
  readonly email: string;
  readonly password: string;
  readonly token: string;
}

if (!process.send) throw new Error('bench-servers runs as a child process of a bench script');

// The bench signs one account in from every connection at once. Sign-in counts each attempt
// against the failure throttle while its password is being checked (services/auth/accounts.ts),
// so ten parallel correct sign-ins would trip the production limit of ten; the limits are
// raised here. The work measured (the counter statements) is the same at any limit.
const { backend, bareUrl, server, stop } = await startServerPair({
  env: { SIGNIN_FAILURES_PER_ACCOUNT: '1000000', SIGNIN_FAILURES_PER_ADDRESS: '1000000' },
});
// Imported after the pair has set TEST_DATABASE_URL.
const { API, newAccount } = await import('../../test/helpers/test-server.ts');

const account = newAccount();
const res = await server.api('POST', '/register', { body: account });
if (res.status !== 200) {
  await stop();
  throw new Error(`register failed: ${res.status}`);
}

const ready: BenchServers = {
  backend,
  bareUrl,
  apiOrigin: server.url,
  apiPrefix: API,
  email: account.email,
  password: account.password,
  token: res.body.data.token as string,
};
process.send({ ready });
