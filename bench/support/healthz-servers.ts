/**
 * The server for bench/healthz-under-load.ts, in a process of its own (the probe and the load
 * must not share its event loop): a real Fieldchart server as the test suite starts it (PGlite,
 * or PostgreSQL with BENCH_DATABASE_URL) loaded with `fieldchart seed --demo`. The sign-in
 * failure limits are raised out of reach so that every wrong-password sign-in does the whole
 * work (the throttle statements, the user lookup, argon2) instead of a cheap refusal. Sends
 * `{ ready }`; closes on `'stop'` or disconnect.
 */
import { signedInDemo, startServerPair } from './server-pair.ts';

export interface HealthzServers {
  readonly backend: 'pglite' | 'postgres';
  readonly origin: string;
  readonly apiPrefix: string;
  readonly token: string;
  readonly email: string;
  /** Visits the upcoming list answers with (today's and upcoming). */
  readonly upcoming: { readonly today: number; readonly upcoming: number };
  readonly visits: number;
}

if (!process.send) throw new Error('healthz-servers runs as a child process of a bench script');

const { backend, server, stop } = await startServerPair({
  env: { SIGNIN_FAILURES_PER_ACCOUNT: '1000000000', SIGNIN_FAILURES_PER_ADDRESS: '1000000000' },
});
const { API } = await import('../../test/helpers/test-server.ts');
const seeded = await signedInDemo({ server, stop });
const token = seeded.token;
const upcoming = await server.api('GET', '/get-upcomming-visits', { token });
if (upcoming.status !== 200) {
  await stop();
  throw new Error(`demo set-up failed: upcoming ${upcoming.status}`);
}

const ready: HealthzServers = {
  backend,
  origin: server.url,
  apiPrefix: API,
  token,
  email: seeded.email,
  upcoming: { today: upcoming.body.data.today_visit.length, upcoming: upcoming.body.data.upcomming_visit.length },
  visits: seeded.visits.total,
};
process.send({ ready });
