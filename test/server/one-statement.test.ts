/**
 * runPrepared's values reach the database exactly as bound parameters would: on PGlite the
 * statement is PREPAREd once per session and run by EXECUTE with the values as literals
 * (quoted by pg's escapeLiteral), on PostgreSQL it is a named statement with bound values.
 * Any string (quotes, backslashes, `$$`, Unicode), bytes, numbers, booleans, nulls, dates and
 * JSON come back unchanged; one SQL text is prepared once; a transaction runs it as drizzle does.
 * foldPlaceholders makes each placeholder one parameter, and its statement runs the same way.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { is, Placeholder, sql } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { forEachBackend, onEmbeddedBackend, type TestDatabase } from '../helpers/backends.ts';
import { rowsOf } from '../../server/src/db/database.ts';
import { foldPlaceholders, runPrepared, sessionPrepared } from '../../server/src/db/one-statement.ts';

const dialect = new PgDialect();

/** Text PostgreSQL accepts: no NUL (the project's text rule refuses it at the edge) and no lone surrogate. */
const pgText = fc.string({ unit: 'grapheme', maxLength: 60 }).map((s) => s.replace(/\0/g, ''));
const tricky = fc.constantFrom("'", "''", '\\', "\\'", "E'\\x41'", '$$', '$1', "'); drop table users; --", '\\x00ff', '\u00e9\u{1F600}');

forEachBackend('runPrepared and folded statements', (backend) => {
  let t: TestDatabase;
  before(async () => {
    t = await backend.open();
  });
  after(() => t.drop());

  test('property: strings, numbers, booleans and nulls come back as they went in', async () => {
    const db = t.database.db;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(pgText, tricky, fc.tuple(tricky, pgText).map(([a, b]) => a + b)),
        fc.option(fc.integer({ min: -2_000_000_000, max: 2_000_000_000 })),
        fc.boolean(),
        async (text, n, flag) => {
          const [row] = await runPrepared<{ t: string; n: number | null; b: boolean }>(db, 'echo', sql`select ${text}::text as t, ${n}::int as n, ${flag}::boolean as b`);
          assert.deepEqual({ ...row }, { t: text, n, b: flag });
        },
      ),
      { numRuns: 150 },
    );
  });

  test('bytes, JSON and ISO dates as bound values would be', async () => {
    const db = t.database.db;
    const bytes = Buffer.from([0, 1, 39, 92, 255, 0x27]);
    const json = { note: "it's \\ fine", nested: [1, null, 'two'] };
    const at = new Date('2026-11-20T14:05:06.789Z');
    const [row] = await runPrepared<{ hex: string; j: unknown; at: string }>(
      db,
      'echo_more',
      sql`select encode(${bytes}::bytea, 'hex') as hex, ${JSON.stringify(json)}::jsonb as j, to_char(${at.toISOString()}::timestamptz at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS') as at`,
    );
    assert.deepEqual({ ...row }, { hex: bytes.toString('hex'), j: json, at: '2026-11-20T14:05:06.789' });
  });

  test('one SQL text is prepared once per session; inside a transaction it runs on the transaction', async () => {
    const db = t.database.db;
    const echo = (v: string) => runPrepared<{ v: string }>(db, 'echo_once', sql`select ${v}::text as v, 'echo-once-marker' as m`);
    await Promise.all(['a', 'b', 'c'].map(echo));
    assert.equal((await echo('d'))[0]?.v, 'd');
    if (backend.name === 'pglite') {
      const prepared = rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from pg_prepared_statements where statement like '%echo-once-marker%'`));
      assert.equal(prepared[0]?.n, 1, 'concurrent first calls share one PREPARE');
    }
    await db.execute(sql`create table if not exists one_statement_probe (v text)`);
    await assert.rejects(
      db.transaction(async (tx) => {
        await runPrepared(tx, 'probe_insert', sql`insert into one_statement_probe (v) values (${"it's rolled back"}) returning v`);
        throw new Error('roll back');
      }),
      /roll back/,
    );
    const left = rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from one_statement_probe`));
    assert.equal(left[0]?.n, 0, 'the insert was part of the rolled-back transaction');
  });

  test('runs with the values named once, as a prepared statement (and on PGlite as PREPARE … EXECUTE)', async () => {
    const db = t.database.db;
    const query = foldPlaceholders(dialect.sqlToQuery(sql`select ${sql.placeholder('n')}::int * 2 + ${sql.placeholder('n')}::int as v, ${sql.placeholder('s')}::text || ${sql.placeholder('s')}::text as w`));
    for (const n of [1, 5]) {
      const rows = rowsOf<{ v: number; w: string }>(await db._.session.prepareQuery(query, undefined, 'fold_probe', false).execute({ n, s: `s${n}` }));
      assert.deepEqual({ ...rows[0] }, { v: 3 * n, w: `s${n}s${n}` });
      // PREPARE … EXECUTE is the one-session database's way (a pool's next query may be on another connection).
      if (backend.name !== 'pglite') continue;
      const [row] = await sessionPrepared<{ v: number; w: string }>(db, `fold_probe_${n}`, query)({ n, s: `s${n}` });
      assert.deepEqual({ ...row }, { v: 3 * n, w: `s${n}s${n}` });
    }
  });
});

onEmbeddedBackend('one generic plan on the one-session database', (backend) => {
  let t: TestDatabase;
  before(async () => {
    t = await backend.open();
  });
  after(() => t.drop());

  test('EXECUTE runs on the generic plan from the first run, and plan_cache_mode is back to auto after it', async () => {
    const db = t.database.db;
    const query = foldPlaceholders(dialect.sqlToQuery(sql`select count(*)::int as n from pg_class where relpages >= ${sql.placeholder('pages')}::int`));
    const run = sessionPrepared<{ n: number }>(db, 'generic_probe', query);
    // PostgreSQL's default tries five custom plans before it considers the generic one.
    for (const pages of [0, 1, 2]) assert.equal(typeof (await run({ pages }))[0]?.n, 'number');
    const [plans] = rowsOf<{ generic: number; custom: number }>(
      await db.execute(sql`select generic_plans::int as generic, custom_plans::int as custom from pg_prepared_statements where name = 'generic_probe'`),
    );
    assert.deepEqual({ ...plans }, { generic: 3, custom: 0 });
    const [mode] = rowsOf<{ plan_cache_mode: string }>(await db.execute(sql`show plan_cache_mode`));
    assert.equal(mode?.plan_cache_mode, 'auto', 'the SET LOCAL lasted for its own statement only');
  });
});

test('foldPlaceholders: each placeholder one parameter wherever it was used, bound values kept in order; a `$` it cannot place throws', () => {
  const folded = foldPlaceholders(
    dialect.sqlToQuery(sql`select ${sql.placeholder('a')}::int + ${sql.placeholder('b')}::int + ${sql.placeholder('a')}::int + ${7}::int, ${'x'}::text, ${sql.placeholder('b')}::int`),
  );
  assert.equal(folded.sql, 'select $1::int + $2::int + $1::int + $3::int, $4::text, $2::int');
  assert.deepEqual(
    folded.params.map((p) => (is(p, Placeholder) ? `:${p.name}` : p)),
    [':a', ':b', 7, 'x'],
  );
  assert.throws(() => foldPlaceholders({ sql: 'select $1, $2', params: [sql.placeholder('a')] }), /names no parameter/);
  assert.throws(() => foldPlaceholders({ sql: 'select 1', params: [sql.placeholder('a')] }), /does not list/);
});
