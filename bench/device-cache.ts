/**
 * What the device cache's encryption costs the client: a feed of N rows committed into a
 * device database (PGlite in a temporary directory), then every visit and patient row read
 * back, with the AES-256-GCM device key and with a cipher that copies (no encryption) — the
 * same code otherwise, in the same run, A-B-B-A (plain, sealed, sealed, plain; each side's two
 * runs averaged). No server: the device side alone. Rows are shaped like the feed's (patients
 * with names, addresses and phones; visits with notes; three timer events per visit).
 *
 * --quick (or BENCH_QUICK=1): 1,000 rows instead of 10,000. Output: a table, then one JSON line.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Change } from '../schema/src/sync/index.ts';
import { commitUnit, readFeedRows } from '../client-lib/src/storage/feed-store.ts';
import { openLocalDb } from '../client-lib/src/storage/local-db.ts';
import type { RowCipher } from '../client-lib/src/storage/row-cipher.ts';
import { fmt, machine, quick, ratio, table } from './support/sync-peer.ts';

const ROWS = quick ? 1_000 : 10_000;
/** Rows per feed unit, as the server batches them (500 per `changes` message). */
const UNIT = 500;

/** The baseline: the same bytes stored, nothing encrypted. */
const copying: RowCipher = { seal: async (p) => p, open: async (s) => s };

function feed(rows: number): Change[] {
  const out: Change[] = [];
  const visitsPerPatient = 4;
  let version = 1;
  while (out.length < rows) {
    const patient = randomUUID();
    out.push({
      op: 'upsert',
      table: 'patients',
      id: patient,
      version: version++,
      row: { uuid: patient, first_name: 'Marguerite', last_name: `Okafor-${out.length}`, address: '1200 W Fullerton Ave, Chicago, IL 60614', phone: '+1 312 555 0142', email: null },
    });
    for (let v = 0; v < visitsPerPatient && out.length < rows; v++) {
      const visit = randomUUID();
      out.push({
        op: 'upsert',
        table: 'visits',
        id: visit,
        version: version++,
        row: { uuid: visit, patient_uuid: patient, visit_date: `2026-11-${String(10 + v).padStart(2, '0')}`, start_time: '09:00', notes: 'Gate code 4411; dog in yard. Knee ROM follow-up.', address: '1200 W Fullerton Ave' },
      });
      for (const t of ['start_travel', 'arrive', 'complete']) {
        if (out.length >= rows) break;
        const id = randomUUID();
        out.push({ op: 'upsert', table: 'timer_events', id, version: version++, row: { uuid: id, schedule_uuid: visit, event_type: t, event_time: '2026-11-10T09:00:00.000Z', latitude: 41.925, longitude: -87.652 } });
      }
    }
  }
  return out;
}

async function run(sealed: boolean, changes: readonly Change[]): Promise<{ commitMs: number; readMs: number; read: number; bytes: number }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-bench-device-'));
  try {
    const db = await openLocalDb(dir, sealed ? {} : { makeCipher: () => copying });
    try {
      const t0 = performance.now();
      for (let i = 0; i < changes.length; i += UNIT) await commitUnit(db, changes.slice(i, i + UNIT), `c${i}`, null);
      const t1 = performance.now();
      const read = (await readFeedRows(db, `tbl in ('visits', 'patients')`, [])).length;
      const t2 = performance.now();
      const [size] = await db.query<{ bytes: number }>(`select pg_total_relation_size('feed_rows')::float8 as bytes`);
      return { commitMs: t1 - t0, readMs: t2 - t1, read, bytes: size?.bytes ?? Number.NaN };
    } finally {
      await db.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const loadBefore = os.loadavg()[0] ?? 0;
const changes = feed(ROWS);
process.stderr.write(`device-cache: ${ROWS} rows, load ${fmt(loadBefore, 2)}\n`);
await run(true, changes.slice(0, UNIT)); // warm-up: JIT, PGlite's WASM, WebCrypto
const order = [false, true, true, false];
const runs: Record<'plain' | 'sealed', Awaited<ReturnType<typeof run>>[]> = { plain: [], sealed: [] };
for (const sealed of order) runs[sealed ? 'sealed' : 'plain'].push(await run(sealed, changes));
const avg = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const side = (k: 'plain' | 'sealed') => ({
  commitMs: avg(runs[k].map((r) => r.commitMs)),
  readMs: avg(runs[k].map((r) => r.readMs)),
  read: runs[k][0]!.read,
  bytes: avg(runs[k].map((r) => r.bytes)),
});
const plain = side('plain');
const sealed = side('sealed');
console.log(
  table(
    ['what', 'no encryption', 'AES-256-GCM', 'ratio'],
    [
      [`commit ${ROWS} feed rows (ms)`, fmt(plain.commitMs), fmt(sealed.commitMs), ratio(sealed.commitMs, plain.commitMs)],
      [`read ${plain.read} visit + patient rows (ms)`, fmt(plain.readMs), fmt(sealed.readMs), ratio(sealed.readMs, plain.readMs)],
      ['feed_rows on disk (MB)', fmt(plain.bytes / 1e6, 2), fmt(sealed.bytes / 1e6, 2), ratio(sealed.bytes, plain.bytes)],
    ],
  ),
);
console.log(
  JSON.stringify({
    bench: 'device-cache',
    backend: 'pglite (device)',
    quick,
    rows: ROWS,
    ...machine(loadBefore),
    results: [
      { name: `commit ${ROWS} feed rows`, plainMs: Number(plain.commitMs.toFixed(1)), sealedMs: Number(sealed.commitMs.toFixed(1)), ratio: Number((sealed.commitMs / plain.commitMs).toFixed(2)) },
      { name: `read ${plain.read} visit + patient rows`, plainMs: Number(plain.readMs.toFixed(1)), sealedMs: Number(sealed.readMs.toFixed(1)), ratio: Number((sealed.readMs / plain.readMs).toFixed(2)) },
      { name: 'feed_rows size', plainBytes: plain.bytes, sealedBytes: sealed.bytes, ratio: Number((sealed.bytes / plain.bytes).toFixed(2)) },
    ],
  }),
);
