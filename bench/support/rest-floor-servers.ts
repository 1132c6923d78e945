/**
 * The servers for bench/rest-floor.ts, in a process of their own: a real Fieldchart server
 * (as the test suite starts it, but with the worker and the test-only response check off; PGlite, or PostgreSQL with BENCH_DATABASE_URL)
 * loaded with `fieldchart seed --demo`, and the raw floor (support/rest-floor.ts) on the same
 * database. Statements are counted at the driver: postgres.js's `debug` hook on each side's
 * client; on PGlite every simple Query or Execute message that reaches the engine (both sides
 * share the one embedded database, so the parent counts one side at a time). Sends
 * `{ ready }`; answers `'count'` with `{ counts }`; closes on `'stop'` or disconnect.
 */
import type { EmbeddedPglite } from '../../server/src/db/database.ts';
import type { PgliteThread } from '../../server/src/db/pglite-thread-client.ts';
import postgres from 'postgres';
import { signedInDemo, startServerPair } from './server-pair.ts';
import { floorSqlOf, startFloor } from './rest-floor.ts';

export interface RestFloorServers {
  readonly backend: 'pglite' | 'postgres';
  readonly floorUrl: string;
  readonly apiOrigin: string;
  readonly apiPrefix: string;
  readonly token: string;
  /** A documented (completed, signed) visit for visit-details. */
  readonly visitUuid: string;
  /** Scheduled visits (dated in the past, so no list shows them) for timer-event writes. */
  readonly timerVisits: readonly string[];
  readonly upcoming: { readonly today: number; readonly upcoming: number };
}

export interface StatementCounts {
  readonly project: number;
  readonly floor: number;
}

if (!process.send) throw new Error('rest-floor-servers runs as a child process of a bench script');

const TIMER_VISITS = Number(process.env.BENCH_TIMER_VISITS ?? 40_000);
/** Completed visits (four timer events each) already on the account before the run. */
const TIMER_HISTORY = Number(process.env.BENCH_TIMER_HISTORY ?? 10_000);

const { backend, server, stop } = await startServerPair({ env: { WORKER_ENABLED: 'false', RESPONSE_CHECK: 'false' } });
const { API } = await import('../../test/helpers/test-server.ts');
const seeded = await signedInDemo({ server, stop });
const token = seeded.token;
const history = await server.api('GET', '/get-visit-history?record_type=with_notes&per_page=1', { token });
const visitUuid = history.body?.data?.[0]?.schedule_uuid as string | undefined;
const upcoming = await server.api('GET', '/get-upcomming-visits', { token });
if (!visitUuid || upcoming.status !== 200) {
  await stop();
  throw new Error(`demo set-up failed: history ${history.status}, upcoming ${upcoming.status}`);
}
const ownerId = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')).sub as string;

const counts = { project: 0, floor: 0 };
const database = server.runtime.database;
let floorSql: postgres.Sql | null = null;
if (database.sql) {
  // postgres.js reads its options object at each query: the hook sees every statement.
  (database.sql.options as { debug?: unknown }).debug = () => void counts.project++;
  // The same pool size as the project's connection pool: neither side waits for connections more.
  floorSql = postgres(server.db.url as string, { max: database.sql.options.max, onnotice: () => {}, debug: () => void counts.floor++ });
}
// PGlite runs on its own thread, which counts every simple Query and Execute message (one per
// statement run) that reaches the engine.
const pgliteThread = database.pglite as PgliteThread | null;

const insertVisits = `insert into visits (id, owner_id, visit_date, start_time, status, visit_type)
  select gen_random_uuid(), $1, date '2020-01-01', '09:00', 'scheduled', 'routine' from generate_series(1, $2) returning id::text`;
const timerVisits = database.sql
  ? (await database.sql.unsafe(insertVisits, [ownerId, TIMER_VISITS])).map((r) => r.id as string)
  : (await (database.pglite as EmbeddedPglite).query<{ id: string }>(insertVisits, [ownerId, TIMER_VISITS])).rows.map((r) => r.id);

// A working clinician's history: completed visits with their four timer events each, then
// ANALYZE. Without it timer_events holds the demo's ~200 rows, the planner's statistics say
// "scan it whole", and a statement prepared on them keeps scanning while the run adds
// thousands of rows (4 ms reads seen) — a cost of the empty table, not of the endpoint.
const insertHistory = `with h as (insert into visits (id, owner_id, visit_date, start_time, status, visit_type)
    select gen_random_uuid(), $1, date '2019-01-01' + (n % 365), '09:00', 'completed', 'routine' from generate_series(1, $2) n returning id, visit_date)
  insert into timer_events (visit_id, owner_id, event_type, event_time)
    select h.id, $1, k.t, h.visit_date + time '09:00' + k.m * interval '1 minute'
    from h, (values ('start_travel', 0), ('arrive', 15), ('start_documentation', 60), ('complete', 75)) k(t, m)`;
if (database.sql) {
  await database.sql.unsafe(insertHistory, [ownerId, TIMER_HISTORY]);
  await database.sql.unsafe('analyze');
} else {
  await (database.pglite as EmbeddedPglite).query(insertHistory, [ownerId, TIMER_HISTORY]);
  await (database.pglite as EmbeddedPglite).exec('analyze');
}

const floor = await startFloor({
  db: floorSqlOf(floorSql ? { sql: floorSql, pglite: null } : { sql: null, pglite: database.pglite }),
  dataDir: server.dataDir,
  issuer: server.config.jwt.issuer,
  audience: server.config.jwt.audience,
});

process.on('message', (m) => {
  if (m !== 'count') return;
  if (!pgliteThread) process.send?.({ counts: { ...counts } });
  else void pgliteThread.statementsRun().then((n) => process.send?.({ counts: { project: n, floor: n } }));
});
process.on('disconnect', () => void floor.close().then(() => floorSql?.end()));

const ready: RestFloorServers = {
  backend,
  floorUrl: floor.url,
  apiOrigin: server.url,
  apiPrefix: API,
  token,
  visitUuid,
  timerVisits,
  upcoming: { today: upcoming.body.data.today_visit.length, upcoming: upcoming.body.data.upcomming_visit.length },
};
process.send({ ready });
