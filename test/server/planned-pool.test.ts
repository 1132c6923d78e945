/**
 * `Database.planned`: on PostgreSQL a pool of its own whose sessions keep one generic plan per
 * prepared statement (the feed's diff runs there, planned once for every poke), closed with the
 * database; the main pool is left to PostgreSQL's own choice. On PGlite it is the database.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import postgres from 'postgres';
import { rowsOf } from '../../server/src/db/database.ts';
import { forEachBackend, type TestDatabase } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';

const settingOf = async (db: TestDatabase['database']['db']) =>
  rowsOf<{ mode: string }>(await db.execute(sql`select current_setting('plan_cache_mode') as mode`))[0]?.mode;

forEachBackend('the planned pool', (backend) => {
  let t: TestDatabase;
  before(async () => {
    t = await backend.open();
  });
  after(() => t.drop());

  test('keeps generic plans on PostgreSQL, beside a main pool that PostgreSQL plans as it chooses; is the database itself on PGlite', async () => {
    const { database } = t;
    if (database.kind === 'pglite') {
      assert.equal(database.planned, database.db);
      return;
    }
    assert.equal(await settingOf(database.planned), 'force_generic_plan');
    assert.equal(await settingOf(database.db), 'auto');
  });

  test('is closed with the database: no session of it is left', { skip: backend.name !== 'postgres' && 'PostgreSQL only' }, async () => {
    const other = await backend.open();
    const url = other.url as string;
    await settingOf(other.database.planned);
    await other.database.close();
    const admin = postgres(url, { max: 1, onnotice: () => {} });
    try {
      // A backend leaves pg_stat_activity a moment after its client hangs up.
      await eventually(async () => {
        const [row] = await admin`select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'fieldchart-feed'`;
        assert.equal(row?.n, 0);
      });
    } finally {
      await admin.end();
      await other.drop().catch(() => {});
    }
  });
});
