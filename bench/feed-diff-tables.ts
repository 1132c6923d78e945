/**
 * What a poke's diff costs for the tables it reads. A write updates one visit's mileage (as PUT
 * /visit/{uuid}/mileage and the write → device bench do), and then, from the cursor before
 * the write, in the same run on the same database, interleaved in rounds so load on the
 * machine hits them alike:
 *
 *   pk read     the floor's read: the changed mileage row by its primary key (prepared) — the baseline
 *   scope       the diff's statement with the scope only (snapshot, time zone, seat, overrides,
 *               the device's acked id) and no table
 *   mileage     what a poke of visit_mileage alone reads since migration 0026 (feed.ts
 *               `tableDiffQuery`): the scope without the device's acked id, and the mileage
 *               written since the cursor
 *   every table the diff as the feed runs it on every poke (feed.ts `diffQuery()`): the scope and
 *               all eight tables
 *
 * Each is the feed's own statement builder (`diffQuery`, `tableDiffQuery`), prepared as the feed prepares its
 * diff, and the mileage and full statements must return the written row. On PostgreSQL the run
 * also counts the relation locks each statement takes (a backend holds 16 of them on the fast
 * path; the rest go to the shared lock table). A clinician's day of 20 visits, each with a note,
 * three events and mileage (support/visit-day-seed.ts).
 *
 * PGlite always; PostgreSQL too when BENCH_DATABASE_URL names a server where a throwaway database
 * may be created. BENCH_DIFF_WRITES (default 300, 20–5,000) writes.
 * Output: a table, then one JSON line (last on stdout).
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { eq, fillPlaceholders, sql } from 'drizzle-orm';
import { visitMileage } from '@fieldchart/schema/db';
import type { Database } from '../server/src/db/database.ts';
import { executeText } from '../server/src/db/one-statement.ts';
import { createPhiCrypto } from '../server/src/security/phi-crypto.ts';
import { generateKeyFile } from '../server/src/security/phi-keyring.ts';
import { createFeed, diffQuery, FEED_TABLES, tableDiffQuery, prepareDiffStatement, windowOf, type DiffValues, type FeedTable } from '../server/src/services/sync/feed.ts';
import { decodeCursor } from '../server/src/services/sync/feed-cursor.ts';
import { onEachBackend } from './support/each-backend.ts';
import { setting } from './support/measure.ts';
import { fmt, latencies, latencyJson, ratio, table, type Latencies } from './support/sync-peer.ts';
import { seedVisitDay } from './support/visit-day-seed.ts';

const WRITES = setting('BENCH_DIFF_WRITES', 300, 20, 5_000);
const WARMUP = 30;
const VISITS = 20;

const KINDS = [
  { name: 'pk read', tables: null },
  { name: 'scope', tables: [] },
  { name: 'mileage', tables: ['visit_mileage'] },
  { name: 'every table', tables: FEED_TABLES },
] as const satisfies ReadonlyArray<{ name: string; tables: readonly FeedTable[] | null }>;
type Kind = (typeof KINDS)[number]['name'];

async function measure(backend: string, database: Database) {
  const { db } = database;
  const oneSession = database.pglite !== null;
  const phi = createPhiCrypto(generateKeyFile());
  const feed = createFeed({ db, phi, oneSession, planned: database.planned });
  const { user, visitIds } = await seedVisitDay(db, phi, VISITS);
  const visit = visitIds[0] as string;
  const where = database.planned ?? db;

  const pk = where.select().from(visitMileage).where(eq(visitMileage.visitId, sql.placeholder('visit'))).prepare('bench_diff_pk');
  const statements = new Map<Kind, { query: { sql: string; params: unknown[] }; run: (values: DiffValues) => Promise<Array<Record<string, unknown>>> }>();
  for (const kind of KINDS) {
    if (!kind.tables) continue;
    const query = kind.name === 'mileage' ? tableDiffQuery(['visit_mileage']) : diffQuery(kind.tables);
    statements.set(kind.name, { query, run: prepareDiffStatement(where, oneSession, `bench_diff_${kind.name.replace(' ', '_')}`, query) });
  }

  let read = await feed.read(user, null, new Date());
  const samples = new Map<Kind, number[]>(KINDS.map((k) => [k.name, []]));
  let locks: Record<string, { fastPath: number; shared: number }> | null = null;
  for (let i = 0; i < WARMUP + WRITES; i++) {
    const miles = 10 + (i % 50);
    await db.transaction(async (tx) => {
      await tx.update(visitMileage).set({ totalMiles: miles, recordedAt: new Date() }).where(eq(visitMileage.visitId, visit));
    });
    const since = decodeCursor(read.cursor);
    if (!since) throw new Error('the feed answered a cursor it cannot read');
    const window = windowOf(new Date(), read.timeZone);
    const values: DiffValues = { user, client: '00000000-0000-0000-0000-000000000000', from: window.from, to: window.to, since: since.snapshot, sinceFrom: since.windowFrom, sinceTo: since.windowTo };
    // Each write starts with the next kind: none always runs first, on a colder cache.
    for (let k = 0; k < KINDS.length; k++) {
      const kind = KINDS[(i + k) % KINDS.length] as (typeof KINDS)[number];
      const started = performance.now();
      if (kind.tables === null) {
        const [row] = await pk.execute({ visit });
        if (row?.totalMiles !== miles) throw new Error('the primary-key read missed the write');
      } else {
        const [row] = await (statements.get(kind.name) as { run: (v: DiffValues) => Promise<Array<Record<string, unknown>>> }).run(values);
        const mileage = row?.visit_mileage;
        if (kind.tables.includes('visit_mileage' as never) && !String(mileage).includes(`"total_miles":${miles}`)) throw new Error(`the ${kind.name} diff missed the write`);
      }
      if (i >= WARMUP) samples.get(kind.name)?.push(performance.now() - started);
    }
    if (i === WARMUP && database.sql) locks = await relationLocks(database, statements, values);
    read = await feed.read(user, read.cursor, new Date());
  }
  const of = (kind: Kind) => latencies(samples.get(kind) ?? []);
  return { backend, kinds: Object.fromEntries(KINDS.map((k) => [k.name, of(k.name)])) as Record<Kind, Latencies>, locks };
}

/**
 * The relation locks each diff statement takes when a poke runs it: prepared, planned once
 * (generic), then run in a transaction of its own whose locks are read before it ends. Planning
 * locks every index of a table; a poke's run of the cached plan only those its plan uses.
 */
async function relationLocks(database: Database, statements: Map<Kind, { query: { sql: string; params: unknown[] } }>, values: DiffValues) {
  const pg = database.sql;
  if (!pg) return null;
  const out: Record<string, { fastPath: number; shared: number }> = {};
  const connection = await pg.reserve();
  try {
    await connection.unsafe('set plan_cache_mode = force_generic_plan');
    for (const [name, { query }] of statements) {
      const execute = executeText('bench_locks', fillPlaceholders(query.params, values));
      await connection.unsafe(`prepare bench_locks as ${query.sql}`);
      await connection.unsafe(execute);
      await connection.unsafe('begin');
      await connection.unsafe(execute);
      const rows = await connection.unsafe<Array<{ fastpath: boolean; n: number }>>(
        `select fastpath, count(*)::int as n from pg_locks where pid = pg_backend_pid() and locktype = 'relation' and relation <> 'pg_locks'::regclass group by fastpath`,
      );
      await connection.unsafe('commit');
      await connection.unsafe('deallocate bench_locks');
      out[name] = { fastPath: rows.find((r) => r.fastpath)?.n ?? 0, shared: rows.find((r) => !r.fastpath)?.n ?? 0 };
    }
    await connection.unsafe('reset plan_cache_mode');
  } finally {
    connection.release();
  }
  return out;
}

const loadBefore = os.loadavg()[0] ?? 0;
const results = await onEachBackend(measure);

console.log(`a mileage write → the statement a poke runs, from the cursor before the write (${WRITES} writes after ${WARMUP}, a day of ${VISITS} visits)`);
console.log(
  table(
    ['backend', 'statement', 'n', 'p50 ms', 'p99 ms', 'p50 vs pk read', 'p50 vs every table', 'relation locks (fast path + shared)'],
    results.flatMap((r) =>
      KINDS.map((k) => {
        const l = r.kinds[k.name];
        const lock = r.locks?.[k.name];
        return [r.backend, k.name, String(l.n), fmt(l.p50, 3), fmt(l.p99, 3), ratio(l.p50, r.kinds['pk read'].p50), ratio(l.p50, r.kinds['every table'].p50), lock ? `${lock.fastPath} + ${lock.shared}` : '—'];
      }),
    ),
  ),
);
console.log(`load average ${loadBefore.toFixed(2)} before, ${(os.loadavg()[0] ?? 0).toFixed(2)} after, ${os.cpus().length} cores`);
console.log(
  JSON.stringify({
    bench: 'feed-diff-tables',
    writes: WRITES,
    loadAverage: { before: loadBefore, after: os.loadavg()[0] ?? 0 },
    results: results.map((r) => ({
      backend: r.backend,
      ...Object.fromEntries(KINDS.map((k) => [k.name, latencyJson(r.kinds[k.name])])),
      mileageVsEveryTable: Number((r.kinds.mileage.p50 / r.kinds['every table'].p50).toFixed(2)),
      everyTableVsPkRead: Number((r.kinds['every table'].p50 / r.kinds['pk read'].p50).toFixed(2)),
      mileageVsPkRead: Number((r.kinds.mileage.p50 / r.kinds['pk read'].p50).toFixed(2)),
      relationLocks: r.locks,
    })),
  }),
);
