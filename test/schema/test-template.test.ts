/**
 * The PGlite test template's cluster (helpers/backends.ts `testCluster`): 1 MB log segments and
 * the one database a PGlite instance serves, so that every test open reads a small archive.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PGlite } from '@electric-sql/pglite';
import { pgliteBackend } from '../helpers/backends.ts';

test('a PGlite test database has 1 MB log segments and no template databases, and is migrated', async (t) => {
  const db = await pgliteBackend.open();
  t.after(() => db.drop());
  const pglite = db.database.pglite as PGlite;
  const [segment] = (await pglite.query<{ size: string }>("select current_setting('wal_segment_size') as size")).rows;
  assert.equal(segment?.size, '1MB');
  const names = (await pglite.query<{ datname: string }>('select datname from pg_database order by datname')).rows.map((r) => r.datname);
  assert.deepEqual(names, ['postgres']);
  const [migrated] = (await pglite.query<{ n: number }>("select count(*)::int as n from information_schema.tables where table_name = 'visits'")).rows;
  assert.equal(migrated?.n, 1);
});
