/**
 * Migration 0027 keeps what 0018's table held: a database migrated to 0026 with mutation digests
 * in `sync_mutation_digests` has them as runs of one in `sync_mutation_digest_runs` after the
 * rest of the migrations, and the old table is gone. On PGlite and, with TEST_DATABASE_URL, on
 * a PostgreSQL database of its own.
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { sql, type SQL } from 'drizzle-orm';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migratePostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { rowsOf } from '../../server/src/db/database.ts';
import { migrationsFolder } from '../../server/src/db/migrate.ts';

interface Journal {
  entries: Array<{ idx: number; tag: string }>;
}

/** A copy of the migrations folder whose journal ends at `lastIdx`. */
function migrationsUpTo(lastIdx: number): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-migrations-'));
  fs.cpSync(migrationsFolder, dir, { recursive: true });
  const file = path.join(dir, 'meta/_journal.json');
  const journal = JSON.parse(fs.readFileSync(file, 'utf8')) as Journal;
  journal.entries = journal.entries.filter((e) => e.idx <= lastIdx);
  fs.writeFileSync(file, JSON.stringify(journal));
  return dir;
}

const digest = (n: number) => createHash('sha256').update(`mutation ${n}`).digest('hex');

interface Target {
  migrate(folder: string): Promise<void>;
  rows(query: SQL): Promise<Array<Record<string, unknown>>>;
  close(): Promise<void>;
}

async function checkConversion(target: Target): Promise<void> {
  const before = migrationsUpTo(26);
  try {
    await target.migrate(before);
    const user = randomUUID();
    const client = randomUUID();
    await target.rows(sql`insert into users (id, email, password_hash, first_name, last_name) values (${user}::uuid, ${`${user}@example.com`}, 'x', 'Old', 'Digests')`);
    await target.rows(sql`
      insert into sync_mutation_digests (user_id, client_id, mutation_id, digest, created_at)
      values (${user}::uuid, ${client}::uuid, 1, ${digest(1)}, now() - interval '3 days'),
             (${user}::uuid, ${client}::uuid, 2, ${digest(2)}, now() - interval '2 days'),
             (${user}::uuid, ${client}::uuid, 5, ${digest(5)}, now() - interval '1 day')`);
    await target.migrate(migrationsFolder);
    const runs = await target.rows(sql`
      select first_mutation_id::int as first, last_mutation_id::int as last, array_to_string(mutation_ids, ',') as ids, digests,
             round(extract(epoch from now() - created_at) / 86400)::int as days
      from sync_mutation_digest_runs where user_id = ${user}::uuid and client_id = ${client}::uuid order by 1`);
    assert.deepEqual(runs, [
      { first: 1, last: 1, ids: '1', digests: digest(1), days: 3 },
      { first: 2, last: 2, ids: '2', digests: digest(2), days: 2 },
      { first: 5, last: 5, ids: '5', digests: digest(5), days: 1 },
    ]);
    const [old] = await target.rows(sql`select to_regclass('sync_mutation_digests') is null as gone`);
    assert.equal(old?.gone, true);
  } finally {
    fs.rmSync(before, { recursive: true, force: true });
    await target.close();
  }
}

test('migration 0027 on PGlite: the digests kept become runs of one', async () => {
  const pglite = await PGlite.create('memory://');
  const db = drizzlePglite(pglite);
  await checkConversion({
    migrate: (folder) => migratePglite(db, { migrationsFolder: folder }),
    rows: async (query) => rowsOf<Record<string, unknown>>(await db.execute(query)),
    close: () => pglite.close(),
  });
});

test('migration 0027 on PostgreSQL: the digests kept become runs of one', { skip: process.env.TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set' }, async () => {
  const admin = postgres(process.env.TEST_DATABASE_URL as string, { max: 1, onnotice: () => {} });
  const name = `fc_t_mig_${process.pid}_${randomUUID().slice(0, 8)}`;
  await admin.unsafe(`create database "${name}"`);
  const url = new URL(process.env.TEST_DATABASE_URL as string);
  url.pathname = `/${name}`;
  const client = postgres(url.toString(), { max: 1, onnotice: () => {} });
  const db = drizzlePostgres(client);
  try {
    await checkConversion({
      migrate: (folder) => migratePostgres(db, { migrationsFolder: folder }),
      // Plain objects: the driver's rows have a prototype of their own.
      rows: async (query) => rowsOf<Record<string, unknown>>(await db.execute(query)).map((r) => ({ ...r })),
      close: () => client.end({ timeout: 5 }),
    });
  } finally {
    await admin.unsafe(`drop database if exists "${name}" with (force)`);
    await admin.end({ timeout: 5 });
  }
});
