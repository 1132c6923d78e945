/**
 * The servers for bench/visits-throughput.ts, in a process of their own: a bare Fastify
 * route, and a real Fieldchart server (as the test suite starts it; PGlite, or PostgreSQL
 * with BENCH_DATABASE_URL) loaded with `fieldchart seed --demo`. Sends `{ ready }` with the
 * demo clinician's token and a documented visit's uuid; closes on `'stop'` or disconnect.
 */
import { signedInDemo, startServerPair } from './server-pair.ts';

export interface DemoServers {
  readonly backend: 'pglite' | 'postgres';
  readonly bareUrl: string;
  readonly apiOrigin: string;
  readonly apiPrefix: string;
  readonly token: string;
  readonly visitUuid: string;
  readonly visits: number;
  readonly todayVisits: number;
}

if (!process.send) throw new Error('demo-servers runs as a child process of a bench script');

const { backend, bareUrl, server, stop } = await startServerPair();
// Imported after the pair has set TEST_DATABASE_URL.
const { API } = await import('../../test/helpers/test-server.ts');
const seeded = await signedInDemo({ server, stop });
const token = seeded.token;
const history = await server.api('GET', '/get-visit-history?record_type=with_notes&per_page=1', { token });
const visitUuid = history.body?.data?.[0]?.schedule_uuid as string | undefined;
if (!visitUuid) {
  await stop();
  throw new Error(`demo set-up failed: history ${history.status}`);
}

const ready: DemoServers = {
  backend,
  bareUrl,
  apiOrigin: server.url,
  apiPrefix: API,
  token,
  visitUuid,
  visits: seeded.visits.total,
  todayVisits: seeded.visits.today,
};
process.send({ ready });
