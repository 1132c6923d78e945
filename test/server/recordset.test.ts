/**
 * recordsetShape (server/src/db/recordset.ts): rows written by one statement through one jsonb
 * parameter come back, read by drizzle, as drizzle would have written them — every column type
 * the batch writers use (uuid, text, text[], timestamptz, double precision, numeric, integer,
 * bigint, boolean, jsonb), a key left out as null, a column name that needs quoting — and an
 * UPDATE … FROM sets every column but the ones it matches on.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { asc, sql } from 'drizzle-orm';
import { bigint, boolean, doublePrecision, integer, jsonb, numeric, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { recordsetShape } from '../../server/src/db/recordset.ts';
import { forEachBackend, type TestDatabase } from '../helpers/backends.ts';

const things = pgTable('recordset_things', {
  id: uuid('id').primaryKey(),
  label: text('label').notNull(),
  tags: text('tags').array().notNull(),
  seenAt: timestamp('seen_at', { withTimezone: true }),
  lat: doublePrecision('lat'),
  miles: numeric('miles', { precision: 10, scale: 2, mode: 'number' }),
  count: integer('count'),
  big: bigint('big', { mode: 'number' }),
  done: boolean('done'),
  details: jsonb('details'),
  odd: text('odd "name"'),
});
const CREATE = sql.raw(`create table recordset_things (
  id uuid primary key, label text not null, tags text[] not null, seen_at timestamptz, lat double precision,
  miles numeric(10, 2), count integer, big bigint, done boolean, details jsonb, "odd ""name""" text)`);

const ALL = recordsetShape(things, ['id', 'label', 'tags', 'seenAt', 'lat', 'miles', 'count', 'big', 'done', 'details', 'odd']);
const RELABEL = recordsetShape(things, ['id', 'label', 'count'], { match: ['id'] });

const pgText = fc.string({ maxLength: 30 }).map((s) => s.replace(/\0/g, ''));
const row = fc.record(
  {
    id: fc.uuid({ version: 4 }),
    label: pgText,
    tags: fc.array(pgText, { maxLength: 4 }),
    seenAt: fc.option(fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })),
    lat: fc.option(fc.double({ min: -90, max: 90, noNaN: true, noDefaultInfinity: true }).map((x) => (Object.is(x, -0) ? 0 : x))),
    miles: fc.option(fc.integer({ min: -99_999_999, max: 99_999_999 }).map((c) => c / 100)),
    count: fc.option(fc.integer({ min: -2_000_000_000, max: 2_000_000_000 })),
    big: fc.option(fc.maxSafeInteger()),
    done: fc.option(fc.boolean()),
    details: fc.option(fc.dictionary(pgText, fc.oneof(pgText, fc.integer(), fc.boolean(), fc.constant(null)), { maxKeys: 3 }).map((d) => JSON.parse(JSON.stringify(d)) as unknown)),
    odd: fc.option(pgText),
  },
  // A key left out is a null column, as drizzle's insert makes it.
  { requiredKeys: ['id', 'label', 'tags'] },
);

forEachBackend('recordset shapes', (backend) => {
  let t: TestDatabase;
  before(async () => {
    t = await backend.open();
    await t.database.db.execute(CREATE);
  });
  after(() => t.drop());

  test('property: rows written through one jsonb parameter read back as they were given', async () => {
    const db = t.database.db;
    await fc.assert(
      fc.asyncProperty(fc.uniqueArray(row, { selector: (r) => r.id, maxLength: 8 }), async (rows) => {
        await db.execute(sql`delete from ${things}`);
        await db.execute(sql`insert into ${things} (${ALL.columns}) select ${ALL.values} from ${ALL.from(rows)}`);
        const back = await db.select().from(things).orderBy(asc(things.id));
        const expected = [...rows]
          .sort((a, b) => (a.id < b.id ? -1 : 1))
          .map((r) => ({ seenAt: null, lat: null, miles: null, count: null, big: null, done: null, details: null, odd: null, ...r }));
        assert.deepEqual(back, expected);
      }),
      { numRuns: 60 },
    );
  });

  test('an UPDATE … FROM sets the shape’s columns but the matched ones, on the matched rows only', async () => {
    const db = t.database.db;
    await db.execute(sql`delete from ${things}`);
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    await db.insert(things).values([a, b, c].map((id) => ({ id, label: 'before', tags: ['x'], count: 1, done: true })));
    await db.execute(sql`
      update ${things} as t set ${RELABEL.assignments}
      from ${RELABEL.from([
        { id: a, label: 'after a', count: 7 },
        { id: c, label: 'after c' },
      ])}
      where t.id = x."id"`);
    const back = new Map((await db.select().from(things)).map((r) => [r.id, r]));
    assert.deepEqual([back.get(a)?.label, back.get(a)?.count, back.get(a)?.done], ['after a', 7, true]);
    assert.deepEqual([back.get(b)?.label, back.get(b)?.count], ['before', 1]);
    assert.deepEqual([back.get(c)?.label, back.get(c)?.count], ['after c', null], 'a key left out is set to null');
  });
});

test('a key that is not a column of the table is refused when the shape is made', () => {
  assert.throws(() => recordsetShape(things, ['id', 'nope' as 'id']), /no column nope/);
});
