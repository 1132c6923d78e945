/**
 * The shared database factory: every database-backed suite runs once per backend, PGlite
 * always and PostgreSQL when TEST_DATABASE_URL is set. Each call of `open()` gets a fresh,
 * fully migrated database restored from a template (PGlite: a dumped data dir; PostgreSQL:
 * CREATE DATABASE … TEMPLATE), so tests never share state. It works below the server (the
 * PGlite pg adapter, the migrations folder), so it imports the database layer by path rather
 * than through `@fieldchart/server`.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe } from 'node:test';
import { promisify } from 'node:util';
import { PGlite } from '@electric-sql/pglite';
import postgres from 'postgres';
import { dropTemplateDatabases } from '../../client-lib/src/storage/pglite-options.ts';
import { openDatabase, type Database } from '../../server/src/db/database.ts';
import { applyMigrations, migrationsFolder } from '../../server/src/db/migrate.ts';
import { PglitePgPool } from '../../server/src/db/pglite-pg-pool.ts';
import { prepareJobQueue } from '../../server/src/jobs/job-queue-pool.ts';
import type { Pool } from 'pg';

export type BackendName = 'pglite' | 'postgres';

export interface TestDatabase {
  readonly database: Database;
  /** For PostgreSQL, the URL of this test's own database (other processes can connect). */
  readonly url: string | null;
  drop(): Promise<void>;
}

export interface TestBackend {
  readonly name: BackendName;
  open(): Promise<TestDatabase>;
}

function migrationsHash(): string {
  const h = createHash('sha256');
  for (const f of fs.readdirSync(migrationsFolder, { recursive: true }).map(String).sort()) {
    const p = path.join(migrationsFolder, f);
    if (fs.statSync(p).isFile()) h.update(f).update(fs.readFileSync(p));
  }
  h.update(JSON.parse(fs.readFileSync(path.resolve('node_modules/graphile-worker/package.json'), 'utf8')).version as string);
  return h.digest('hex').slice(0, 12);
}

const cacheDir = path.join(os.tmpdir(), 'fieldchart-test-cache');
const execFileAsync = promisify(execFile);

async function migrateAll(database: Database, pool: Pool): Promise<void> {
  await applyMigrations(database);
  await prepareJobQueue(pool);
}

/**
 * A PGlite archive made once and kept in the run's test cache under `name`, so that the other
 * test processes read it instead of making it again. Answers the file's path.
 */
async function cachedArchiveFile(name: string, make: () => Promise<Blob>): Promise<string> {
  const file = path.join(cacheDir, name);
  if (fs.existsSync(file)) return file;
  const blob = await make();
  fs.mkdirSync(cacheDir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, Buffer.from(await blob.arrayBuffer()));
  fs.renameSync(tmp, file); // atomic: parallel test processes never read half a file
  return file;
}

/** The archive of `cachedArchiveFile`, read. */
export async function cachedArchive(name: string, make: () => Promise<Blob>): Promise<Blob> {
  return new Blob([fs.readFileSync(await cachedArchiveFile(name, make))]);
}

let pgliteTemplate: Promise<Uint8Array> | null = null;
let pgliteTemplateFile: Promise<string> | null = null;

/**
 * The cluster the PGlite test template is migrated in: PGlite's own initdb with 1 MB log
 * segments instead of 16 MB, and without the `template0` and `template1` databases, which no
 * test reads (a PGlite instance serves its one database, `postgres`). Every PGlite test database
 * and every spawned test server's data dir starts from the template's archive, and an open reads
 * all of it: migrated, 18.4 MB instead of 43.1 MB, and a test backend's open took 540–650 ms of
 * CPU instead of 715–875 ms (medians of seven, two runs each, alternating; this machine). The
 * code under test is the same; production's data dirs keep initdb's defaults.
 */
async function testCluster(): Promise<Uint8Array> {
  const pglite = await PGlite.create('memory://', { initDbStartParams: ['--wal-segsize=1'] });
  try {
    // As the client library's empty device image drops them.
    await dropTemplateDatabases(pglite);
    return new Uint8Array(await (await pglite.dumpDataDir('none')).arrayBuffer());
  } finally {
    await pglite.close();
  }
}

/** In the archive's name: a template kept from a run before this cluster (a file run alone keeps its cache) is not reused. */
const TEST_CLUSTER_KIND = 'wal1-notemplates';

// Uncompressed: PGlite opened a gzipped template in 1.6 s and the same tar in 0.8 s (PGlite
// 0.5, this machine), and every test file opens one or more.
const pgliteTemplateArchive = () =>
  (pgliteTemplateFile ??= cachedArchiveFile(`pglite-${migrationsHash()}-${TEST_CLUSTER_KIND}.tar`, async () => {
    const database = await openDatabase({ kind: 'pglite', dataDir: 'memory://', loadDataDir: await testCluster() });
    const pglite = database.pglite as PGlite;
    const pool = new PglitePgPool(pglite);
    await migrateAll(database, pool.asPgPool());
    await pool.end();
    const blob = await pglite.dumpDataDir('none');
    await database.close();
    return blob;
  }));
const pgliteTemplateBytes = () => (pgliteTemplate ??= pgliteTemplateArchive().then((file) => fs.readFileSync(file)));

/**
 * Fills `dir` (an empty or absent PGlite data dir, e.g. a server's `<FIELDCHART_DATA_DIR>/pgdata`)
 * with the migrated template, so a spawned server reopens it instead of running initdb and
 * every migration: a built server started in 2.7–2.8 s of CPU on it against 6.4–7.0 s on an
 * empty one. The archive is PGlite's own dump of its data dir (paths relative to it), so
 * unpacking it is what PGlite's `loadDataDir` does, without starting a database here.
 */
export async function seedPgliteDataDir(dir: string): Promise<void> {
  const archive = await pgliteTemplateArchive();
  fs.mkdirSync(dir, { recursive: true });
  await execFileAsync('tar', ['-xf', archive, '-C', dir]);
}

/**
 * A new `FIELDCHART_DATA_DIR` for a spawned server (removed by the caller), its PGlite database
 * already migrated unless the server is to use PostgreSQL (`onPostgres`).
 */
export async function serverDataDir(prefix: string, onPostgres: boolean): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  if (!onPostgres) await seedPgliteDataDir(path.join(dir, 'pgdata'));
  return dir;
}

/**
 * A test database's shared buffers: PGlite zeroes them at every open, and a test's data is a few
 * MB. With the server's 128 MB an open from the template cost 0.4 s more CPU (1.2 s against
 * 0.8 s, bench/embedded-open.ts), and every test server opens one. The code under test is the
 * same; a spawned server keeps its own 128 MB.
 */
const TEST_SHARED_BUFFERS = '16MB';

export const pgliteBackend: TestBackend = {
  name: 'pglite',
  async open() {
    const database = await openDatabase({ kind: 'pglite', dataDir: 'memory://', loadDataDir: await pgliteTemplateBytes(), sharedBuffers: TEST_SHARED_BUFFERS });
    return { database, url: null, drop: () => database.close() };
  },
};

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

let pgTemplate: Promise<string> | null = null;

async function postgresTemplate(adminUrl: string): Promise<string> {
  const name = `fc_tpl_${migrationsHash()}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    // One process builds the template; the others wait on the lock and find it built.
    await admin`select pg_advisory_lock(4242001)`;
    const [exists] = await admin`select 1 from pg_database where datname = ${name}`;
    if (!exists) {
      const building = `${name}_build_${process.pid}`;
      await admin.unsafe(`drop database if exists "${building}"`);
      await admin.unsafe(`create database "${building}"`);
      const url = withDatabase(adminUrl, building);
      const database = await openDatabase({ kind: 'postgres', url, poolSize: 2 });
      const { default: pg } = await import('pg');
      const pool = new pg.Pool({ connectionString: url, max: 2 });
      await migrateAll(database, pool);
      await pool.end();
      await database.close();
      await admin.unsafe(`alter database "${building}" rename to "${name}"`);
    }
    await admin`select pg_advisory_unlock(4242001)`;
    return name;
  } finally {
    await admin.end();
  }
}

function postgresBackend(adminUrl: string): TestBackend {
  return {
    name: 'postgres',
    async open() {
      pgTemplate ??= postgresTemplate(adminUrl);
      const template = await pgTemplate;
      const name = `fc_t_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
      const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        for (let attempt = 0; ; attempt++) {
          try {
            await admin.unsafe(`create database "${name}" template "${template}"`);
            break;
          } catch (err) {
            // 55006: another process is copying the template at this instant.
            if ((err as { code?: string }).code !== '55006' || attempt > 50) throw err;
            await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
          }
        }
      } finally {
        await admin.end();
      }
      const url = withDatabase(adminUrl, name);
      const database = await openDatabase({ kind: 'postgres', url, poolSize: 5 });
      return {
        database,
        url,
        async drop() {
          await database.close();
          const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
          try {
            await a.unsafe(`drop database if exists "${name}" with (force)`);
          } finally {
            await a.end();
          }
        },
      };
    },
  };
}

export const backends: readonly TestBackend[] = [
  pgliteBackend,
  ...(process.env.TEST_DATABASE_URL ? [postgresBackend(process.env.TEST_DATABASE_URL)] : []),
];

/** Declares the suite once per backend: `forEachBackend('accounts', (backend) => { … })`. */
export function forEachBackend(title: string, fn: (backend: TestBackend) => void): void {
  for (const backend of backends) {
    describe(`${title} [${backend.name}]`, () => fn(backend));
  }
}

/**
 * Declares a suite on the embedded backend only, for suites whose subject is not the server's
 * database: the client and the field app in Chromium. The server paths they use run on
 * PostgreSQL in the Node client suites (and `the client library in Chromium` runs on both);
 * run twice, the browser suites cost CI about 80 s of a two-core machine that has none idle.
 */
export function onEmbeddedBackend(title: string, fn: (backend: TestBackend) => void): void {
  describe(`${title} [${pgliteBackend.name}]`, () => fn(pgliteBackend));
}
