/**
 * The cost of the audit hash chain on a write: one audited write (a transaction that inserts
 * one audit row, as `around` does at the end of every PHI operation) with the chain trigger
 * on, beside the same write with the trigger disabled, in the same run on the same database,
 * interleaved in rounds so load on the machine hits both alike.
 *
 * And on a batch — the audit rows of a set of a device's queued mutations, 1,000 of one
 * clinician's chain in one statement, as the sync channel writes them per transaction on
 * PostgreSQL — three ways: `audit_append` (recordSucceeded, migration 0025), the same rows
 * chained row by row by the insert trigger (one INSERT … SELECT, as recordSucceeded wrote them
 * before; the baseline), and that INSERT with the chain trigger off (the floor: no chain).
 *
 * PGlite always; PostgreSQL too when BENCH_DATABASE_URL names a scratch database (its
 * audit_log grows). Settings: BENCH_AUDIT_WRITES (default 400, 50–20000) per variant;
 * BENCH_AUDIT_BATCH (default 1000, 10–5000) rows per batch, BENCH_AUDIT_BATCHES (default 24,
 * 8–400) batches per variant.
 * Output: a table, then one JSON line (last on stdout).
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { sql } from 'drizzle-orm';
import { systemClock } from '../server/src/clock.ts';
import { openDatabase, type Database, type Db } from '../server/src/db/database.ts';
import { applyMigrations } from '../server/src/db/migrate.ts';
import { createAuditLog } from '../server/src/services/audit/audit-log.ts';
import { setting } from './support/measure.ts';

const WRITES = setting('BENCH_AUDIT_WRITES', 400, 50, 20_000);
const BATCH = setting('BENCH_AUDIT_BATCH', 1_000, 10, 5_000);
const BATCHES = setting('BENCH_AUDIT_BATCHES', 24, 8, 400);
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
  return {
    backend: name,
    writes: chained.length,
    chainedMedianMs: c.median,
    chainedP99Ms: c.p99,
    plainMedianMs: p.median,
    plainP99Ms: p.p99,
    medianRatio: c.median / p.median,
    batch: await measureBatches(database, audit, org),
  };
}

/** A device's set: BATCH audit rows of one clinician in one transaction, three ways (see the header). */
async function measureBatches(database: Database, audit: ReturnType<typeof createAuditLog>, org: string) {
  const { db } = database;
  const actor = randomUUID();
  const entries = () =>
    Array.from({ length: BATCH }, (_, i) => ({
      ctx: { organizationId: org, actorUserId: actor, requestId: `sync:bench:${i}` },
      entry: { action: 'create' as const, resourceType: 'visit_timer_event', resourceId: randomUUID(), details: { via: 'sync', fields: ['event_type', 'event_time'] } },
    }));
  // recordSucceeded's statement before migration 0025: the rows in order, chained by the row trigger.
  const rowByRow = (tx: Db, batch: ReturnType<typeof entries>) => {
    const rows = batch.map(({ ctx, entry }) => ({
      actor_user_id: ctx.actorUserId,
      organization_id: ctx.organizationId,
      action: entry.action,
      resource_type: entry.resourceType,
      resource_id: entry.resourceId,
      request_id: ctx.requestId,
      details: entry.details,
    }));
    return tx.execute(sql`
      insert into audit_log (at, actor_user_id, organization_id, action, resource_type, resource_id, outcome, request_id, details)
      select ${new Date().toISOString()}::timestamptz, x.actor_user_id, x.organization_id, x.action, x.resource_type, x.resource_id, 'success', x.request_id, x.details
      from rows from (jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as (
        actor_user_id uuid, organization_id uuid, action text, resource_type text, resource_id text, request_id text, details jsonb))
        with ordinality as x(actor_user_id, organization_id, action, resource_type, resource_id, request_id, details, n)
      order by x.n`);
  };
  const time = async (write: (tx: Db) => Promise<unknown>) => {
    const t0 = performance.now();
    await db.transaction(async (tx) => {
      await write(tx);
    });
    return performance.now() - t0;
  };
  const appended: number[] = [];
  const triggered: number[] = [];
  const plain: number[] = [];
  for (let i = 0; i < 2; i++) await time((tx) => audit.recordSucceeded(tx, entries())); // warm-up
  const perRound = Math.ceil(BATCHES / ROUNDS);
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < perRound; i++) appended.push(await time((tx) => audit.recordSucceeded(tx, entries())));
    for (let i = 0; i < perRound; i++) triggered.push(await time((tx) => rowByRow(tx, entries())));
    await db.execute(sql`alter table audit_log disable trigger audit_log_chain`);
    for (let i = 0; i < perRound; i++) plain.push(await time((tx) => rowByRow(tx, entries())));
    await db.execute(sql`alter table audit_log enable trigger audit_log_chain`);
  }
  const a = stats(appended).median;
  const t = stats(triggered).median;
  const p = stats(plain).median;
  return { rows: BATCH, batches: appended.length, appendedMedianMs: a, rowByRowMedianMs: t, unchainedMedianMs: p, ratioToRowByRow: a / t, ratioToUnchained: a / p, rowByRowRatioToUnchained: t / p };
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
console.log(`\naudit rows of a set of queued mutations: ${BATCH} rows of one chain in one transaction (median)`);
console.log('backend   batches  audit_append  row by row (before)  chain off  vs row by row  vs chain off');
for (const { backend, batch: b } of results) {
  console.log(
    `${backend.padEnd(9)} ${String(b.batches).padStart(7)}  ${`${b.appendedMedianMs.toFixed(1)} ms`.padStart(12)}  ${`${b.rowByRowMedianMs.toFixed(1)} ms`.padStart(19)}  ${`${b.unchainedMedianMs.toFixed(1)} ms`.padStart(9)}  ${`${b.ratioToRowByRow.toFixed(2)}×`.padStart(13)}  ${`${b.ratioToUnchained.toFixed(2)}×`.padStart(12)}`,
  );
}
console.log(`load average ${loadBefore.toFixed(2)} before, ${(os.loadavg()[0] ?? 0).toFixed(2)} after, ${os.cpus().length} cores`);
console.log(JSON.stringify({ bench: 'audit-chain', results }));
