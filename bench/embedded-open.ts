/**
 * Opening the embedded database from a data dir archive, as every PGlite test database is
 * opened (the migrated template, `loadDataDir`) and as a restore or a new device starts: PGlite
 * on its own thread through `openDatabase` (db/pglite-thread-client.ts), beside PGlite's own
 * `PGlite.create` with the same archive as a Blob in this thread (the baseline: what PGlite costs
 * with its defaults, no thread). The project's open three ways: the archive as bytes (the test
 * backend's), as a Blob (read once here on Node 20's slow path), and as bytes with 16 MB of
 * shared buffers (the test backend's setting; the server keeps PGlite's 128 MB).
 *
 * Opens alternate between the variants in rounds, so load on the machine hits them alike. Each
 * figure is the median of the wall time and of this process's CPU (all its threads) from the
 * call to the first answered query, the database closed after. The archive: a fresh, fully
 * migrated database (43 MB on PGlite 0.5). Settings: BENCH_OPEN_ROUNDS (default 5, 2–50).
 * Run it as the tests run (`node --liftoff-only`, helpers/node-flags.ts) or as the server does.
 * Output: a table, then one JSON line (last on stdout).
 */
import os from 'node:os';
import { PGlite } from '@electric-sql/pglite';
import { openDatabase } from '../server/src/db/database.ts';
import { applyMigrations } from '../server/src/db/migrate.ts';
import { setting } from './support/measure.ts';

const ROUNDS = setting('BENCH_OPEN_ROUNDS', 5, 2, 50);

async function migratedArchive(): Promise<Uint8Array<ArrayBuffer>> {
  const database = await openDatabase({ kind: 'pglite', dataDir: 'memory://' });
  await applyMigrations(database);
  const blob = await database.pglite!.dumpDataDir('none');
  await database.close();
  return new Uint8Array(await blob.arrayBuffer());
}

type Variant = { readonly name: string; readonly open: () => Promise<{ query: () => Promise<unknown>; close: () => Promise<void> }> };

const archive = await migratedArchive();
const variants: Variant[] = [
  {
    name: 'PGlite.create, Blob (baseline)',
    open: async () => {
      const pglite = await PGlite.create({ loadDataDir: new Blob([archive]) });
      return { query: () => pglite.query('select count(*) from users'), close: () => pglite.close() };
    },
  },
  ...([
    ['openDatabase, bytes', () => archive, undefined],
    ['openDatabase, Blob', () => new Blob([archive]), undefined],
    ['openDatabase, bytes, 16 MB buffers', () => archive, '16MB'],
  ] as const).map(([name, loadDataDir, sharedBuffers]): Variant => ({
    name,
    open: async () => {
      const database = await openDatabase({ kind: 'pglite', dataDir: 'memory://', loadDataDir: loadDataDir(), ...(sharedBuffers ? { sharedBuffers } : {}) });
      return { query: () => database.pglite!.query('select count(*) from users'), close: () => database.close() };
    },
  })),
];

const samples = new Map(variants.map((v) => [v.name, { wall: [] as number[], cpu: [] as number[] }]));
// One open of each first, unmeasured: the project's first also compiles PGlite's module for the process.
for (const v of variants) await (await v.open()).close();
for (let round = 0; round < ROUNDS; round++) {
  for (const v of variants) {
    const cpu = process.cpuUsage();
    const started = performance.now();
    const db = await v.open();
    await db.query();
    const wall = performance.now() - started;
    const used = process.cpuUsage(cpu);
    await db.close();
    samples.get(v.name)!.wall.push(wall);
    samples.get(v.name)!.cpu.push((used.user + used.system) / 1000);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const results = variants.map((v) => {
  const s = samples.get(v.name)!;
  return { name: v.name, wallMs: median(s.wall), cpuMs: median(s.cpu) };
});
const base = results[0]!;
const liftoffOnly = process.execArgv.includes('--liftoff-only');
console.log(`embedded-open: a ${(archive.byteLength / 1e6).toFixed(1)} MB archive, ${ROUNDS} rounds, ${liftoffOnly ? '--liftoff-only (as the tests)' : 'V8 defaults (as the server)'}, load ${os.loadavg()[0]!.toFixed(2)}`);
console.log(['variant'.padEnd(36), 'wall ms'.padStart(8), 'CPU ms'.padStart(8), 'CPU vs baseline'.padStart(16)].join('  '));
for (const r of results) {
  console.log([r.name.padEnd(36), r.wallMs.toFixed(0).padStart(8), r.cpuMs.toFixed(0).padStart(8), `${(r.cpuMs / base.cpuMs).toFixed(2)}×`.padStart(16)].join('  '));
}
console.log(
  JSON.stringify({
    bench: 'embedded-open',
    backend: 'pglite',
    archiveBytes: archive.byteLength,
    rounds: ROUNDS,
    liftoffOnly,
    results: results.map((r) => ({ ...r, cpuRatio: r.cpuMs / base.cpuMs, wallRatio: r.wallMs / base.wallMs })),
  }),
);
