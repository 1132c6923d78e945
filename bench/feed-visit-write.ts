/**
 * What a timer event sends to the clinician's devices: the diff the feed runs after a write
 * that inserts a timer event and updates its visit's status and EVV record in one transaction,
 * as POST /visit-timer-events does, on a visit that already has a signed-off SOAP note, three
 * events and mileage. Rows, bytes and the diff's time per write, for two kinds of write in the
 * same run on the same database, interleaved in rounds so load on the machine hits both alike:
 *
 *   in place    the write as the server makes it: the visit stays where it was in the scope,
 *               and the full diff (every table) from the cursor before it
 *   alone       the same write, and the diff its devices' sockets run since migration 0026: the
 *               poked tables (visits, timer_events) alone (feed.ts `streamTable`), from the same
 *               cursor (then a full diff, untimed, moves the cursor for the next write)
 *   re-placed   the same write that also stamps the visit as placed anew (`placed_txid`), as
 *               every visit write counted before migration 0024: the feed then sends the
 *               visit's note (opened), events and mileage again with it — the baseline
 *
 * The rows a write changes are two (the visit and the new event): what any feed must send.
 * PGlite always; PostgreSQL too when BENCH_DATABASE_URL names a server where a throwaway database
 * may be created (the tests' migrated template, test/helpers/backends.ts). BENCH_FEED_WRITES (default 200, 20–5,000) writes per kind.
 * Output: a table, then one JSON line (last on stdout).
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { sql } from 'drizzle-orm';
import type { Database } from '../server/src/db/database.ts';
import { createPhiCrypto } from '../server/src/security/phi-crypto.ts';
import { generateKeyFile } from '../server/src/security/phi-keyring.ts';
import { createFeed, type FeedTable } from '../server/src/services/sync/feed.ts';
import { onEachBackend } from './support/each-backend.ts';
import { setting } from './support/measure.ts';
import { seedVisitDay } from './support/visit-day-seed.ts';
import { median } from './support/sync-peer.ts';

const WRITES = setting('BENCH_FEED_WRITES', 200, 20, 5_000);
const ROUNDS = 8;
const WARMUP = 20;
/** One write per visit: each write finds its visit as a clinician's day leaves it (3 events, a note, mileage). */
const VISITS = WARMUP + 3 * ROUNDS * Math.ceil(WRITES / ROUNDS);

async function measure(backend: string, database: Database) {
  const { db } = database;
  const phi = createPhiCrypto(generateKeyFile());
  const feed = createFeed({ db, phi, oneSession: database.pglite !== null, planned: database.planned });
  const { user, visitIds } = await seedVisitDay(db, phi, VISITS);
  const now = new Date();
  const first = await feed.read(user, null, now);
  let cursor = first.cursor;
  const timeZone = first.timeZone;
  const TAP: readonly FeedTable[] = ['visits', 'timer_events'];
  let tick = 0;
  const write = async (kind: 'replaced' | 'inPlace' | 'alone') => {
    const replaced = kind === 'replaced';
    const v = visitIds[tick % VISITS] as string;
    tick++;
    await db.transaction(async (tx) => {
      await tx.execute(sql`insert into timer_events (visit_id, owner_id, event_type, event_time) values (${v}::uuid, ${user}::uuid, 'complete', now() + ${`${tick} seconds`}::interval)`);
      await tx.execute(
        replaced
          ? sql`update visits set status = 'completed', drive_seconds = ${tick}, placed_txid = pg_current_xact_id() where id = ${v}::uuid`
          : sql`update visits set status = 'completed', drive_seconds = ${tick} where id = ${v}::uuid`,
      );
    });
    if (kind === 'alone') {
      const sent: string[] = [];
      const t0 = performance.now();
      const end = await feed.streamTable(user, TAP, cursor, null, now, { timeZone }, { change: (json) => sent.push(json) });
      const ms = performance.now() - t0;
      if (!end) throw new Error('the diff of a timer event’s tables gave way to the full diff');
      cursor = (await feed.read(user, cursor, now)).cursor;
      // Measured as the full diff's are: the changes as objects, serialised again.
      return { rows: sent.length, bytes: Buffer.byteLength(JSON.stringify(sent.map((json) => JSON.parse(json) as unknown))), ms };
    }
    const t0 = performance.now();
    const diff = await feed.read(user, cursor, now);
    const ms = performance.now() - t0;
    cursor = diff.cursor;
    return { rows: diff.changes.length, bytes: Buffer.byteLength(JSON.stringify(diff.changes)), ms };
  };
  for (let i = 0; i < WARMUP; i++) await write((['replaced', 'inPlace', 'alone'] as const)[i % 3] as 'replaced' | 'inPlace' | 'alone');
  type Sample = Awaited<ReturnType<typeof write>>;
  const kinds = { inPlace: [] as Sample[], replaced: [] as Sample[], alone: [] as Sample[] };
  const perRound = Math.ceil(WRITES / ROUNDS);
  for (let r = 0; r < ROUNDS; r++) {
    for (let i = 0; i < perRound; i++) kinds.replaced.push(await write('replaced'));
    for (let i = 0; i < perRound; i++) kinds.inPlace.push(await write('inPlace'));
    for (let i = 0; i < perRound; i++) kinds.alone.push(await write('alone'));
  }
  const sum = (xs: Array<{ rows: number; bytes: number; ms: number }>) => ({
    writes: xs.length,
    rowsPerWrite: xs.reduce((a, x) => a + x.rows, 0) / xs.length,
    bytesPerWrite: xs.reduce((a, x) => a + x.bytes, 0) / xs.length,
    diffMedianMs: median(xs.map((x) => x.ms)),
  });
  const inPlace = sum(kinds.inPlace);
  const replaced = sum(kinds.replaced);
  const alone = sum(kinds.alone);
  return {
    backend,
    inPlace,
    replaced,
    alone,
    bytesRatio: inPlace.bytesPerWrite / replaced.bytesPerWrite,
    msRatio: inPlace.diffMedianMs / replaced.diffMedianMs,
    aloneVsInPlaceMs: alone.diffMedianMs / inPlace.diffMedianMs,
  };
}

const loadBefore = os.loadavg()[0] ?? 0;
const results = await onEachBackend(measure);

console.log(`a timer event on a visit with a note, 3 events and mileage → the diff its devices get (one write per visit, ${VISITS} visits)`);
console.log('backend   kind        writes  rows/write  bytes/write  diff p50   vs re-placed (bytes, time)');
for (const r of results) {
  for (const [kind, s] of [['alone', r.alone], ['in place', r.inPlace], ['re-placed', r.replaced]] as const) {
    const vs =
      kind === 'in place'
        ? `${r.bytesRatio.toFixed(2)}×, ${r.msRatio.toFixed(2)}×`
        : kind === 'alone'
          ? `${(s.bytesPerWrite / r.replaced.bytesPerWrite).toFixed(2)}×, ${(s.diffMedianMs / r.replaced.diffMedianMs).toFixed(2)}× (${r.aloneVsInPlaceMs.toFixed(2)}× in place's time)`
          : '1.00× (baseline)';
    console.log(
      `${r.backend.padEnd(9)} ${kind.padEnd(10)} ${String(s.writes).padStart(7)}  ${s.rowsPerWrite.toFixed(1).padStart(10)}  ${s.bytesPerWrite.toFixed(0).padStart(11)}  ${`${s.diffMedianMs.toFixed(2)} ms`.padStart(8)}   ${vs}`,
    );
  }
}
console.log(`load average ${loadBefore.toFixed(2)} before, ${(os.loadavg()[0] ?? 0).toFixed(2)} after, ${os.cpus().length} cores`);
console.log(JSON.stringify({ bench: 'feed-visit-write', loadAverage: { before: loadBefore, after: os.loadavg()[0] ?? 0 }, results }));
