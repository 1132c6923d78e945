/**
 * The cost of the audit hash chain on a write: one audited write (a transaction that inserts
 * one audit row, as `around` does at the end of every PHI operation) with the chain trigger
 * on, beside the same write with the trigger disabled, in the same run on the same database,
 * interleaved in rounds so load on the machine hits both alike.
 *
 * PGlite always; PostgreSQL too when BENCH_DATABASE_URL names a scratch database (its
 * audit_log grows). Settings: BENCH_AUDIT_WRITES (default 400, 50–20000) per variant.
 * Output: a table, then one JSON line (last on stdout).
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { sql } from 'drizzle-orm';
import { systemClock } from '../server/src/clock.ts';
import { openDatabase, type Database } from '../server/src/db/database.ts';
import { applyMigrations } from '../server/src/db/migrate.ts';
import { createAuditLog } from '../server/src/services/audit/audit-log.ts';
import { setting } from './support/measure.ts';

const WRITES = setting('BENCH_AUDIT_WRITES', 400, 50, 20_000);
const ROUNDS = 8;

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { median: at(0.5), p99: at(0.99) };
};

async function measure(name: string, database: Database) {
  const { db } = database;
  const audit = createAuditLog({ db, clock: systemClock });
  const org = randomUUID();
  // Five clinicians, so five chains that already exist (the common case: a new chain costs one more insert).
  const actors = Array.from({ length: 5 }, () => randomUUID());
  const write = async (i: number) => {
    const t0 = performance.now();
    await db.transaction((tx) =>
      audit.record(
        tx,
        { organizationId: org, actorUserId: actors[i % actors.length]!, requestId: randomUUID() },
        { action: 'read', resourceType: 'visit', resourceId: randomUUID(), details: { route: 'GET /visit-details/:scheduleUuid' } },
        'success',
      ),
    );
    return performance.now() - t0;
  };
  const chained: number[] = [];
  const plain: number[] = [];
  for (let i = 0; i < 50; i++) await write(i); // warm-up
  const perRound = Math.ceil(WRITES / ROUNDS);
  for (let r = 0; r < ROUNDS; r++) {
    await db.execute(sql`alter table audit_log disable trigger audit_log_chain`);
    for (let i = 0; i < perRound; i++) plain.push(await write(i));
    await db.execute(sql`alter table audit_log enable trigger audit_log_chain`);
    for (let i = 0; i < perRound; i++) chained.push(await write(i));
  }
  const c = stats(chained);
  const p = stats(plain);
  return { backend: name, writes: chained.length, chainedMedianMs: c.median, chainedP99Ms: c.p99, plainMedianMs: p.median, plainP99Ms: p.p99, medianRatio: c.median / p.median };
}

const loadBefore = os.loadavg()[0] ?? 0;
const results = [];
{
  const database = await openDatabase({ kind: 'pglite', dataDir: 'memory://' });
  await applyMigrations(database);
  results.push(await measure('pglite', database));
  await database.close();
}
const url = process.env.BENCH_DATABASE_URL;
if (url) {
  const database = await openDatabase({ kind: 'postgres', url, poolSize: 2 });
  await applyMigrations(database);
  results.push(await measure('postgres', database));
  await database.close();
}

const f = (ms: number) => `${(ms * 1000).toFixed(0)} µs`;
console.log('audited write (one transaction, one audit row): chain trigger on vs off');
console.log('backend   writes  chained p50  chained p99  plain p50  plain p99  p50 ratio');
for (const r of results) {
  console.log(
    `${r.backend.padEnd(9)} ${String(r.writes).padStart(6)}  ${f(r.chainedMedianMs).padStart(11)}  ${f(r.chainedP99Ms).padStart(11)}  ${f(r.plainMedianMs).padStart(9)}  ${f(r.plainP99Ms).padStart(9)}  ${r.medianRatio.toFixed(2).padStart(9)}`,
  );
}
console.log(`load average ${loadBefore.toFixed(2)} before, ${(os.loadavg()[0] ?? 0).toFixed(2)} after, ${os.cpus().length} cores`);
console.log(JSON.stringify({ bench: 'audit-chain', results }));
