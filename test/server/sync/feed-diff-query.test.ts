/**
 * The diff's statement built for some tables (feed.ts `diffQuery`, which bench/feed-diff-tables.ts
 * times): the scope always, the named tables' fields and no other's, each placeholder one parameter.
 * Poked tables' diff (`tableDiffQuery`): the scope, those tables, of a visit's child only the rows
 * written since the cursor, and with visits whether one was placed anew.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { diffQuery, FEED_TABLES, pokeTableOf, tableDiffQuery } from '../../../server/src/services/sync/feed.ts';

const SCOPE = ['snapshot', 'time_zone', 'organization', 'feature_overrides', 'acked'];
/** The fields a statement selects: its top-level `as "<name>"` aliases, by name. */
const fieldsOf = (text: string) => FEED_TABLES.concat(SCOPE as never[]).filter((name) => text.includes(`as "${name}"`));

test('every table by default, and a subset keeps the scope and those tables only', () => {
  const all = diffQuery();
  assert.deepEqual(fieldsOf(all.sql).sort(), [...FEED_TABLES, ...SCOPE].sort());
  assert.equal(diffQuery(FEED_TABLES).sql, all.sql);

  const mileage = diffQuery(['visit_mileage']);
  assert.deepEqual(fieldsOf(mileage.sql).sort(), ['visit_mileage', ...SCOPE].sort());
  assert.ok(mileage.sql.length < all.sql.length / 3, 'the subset statement is a fraction of the whole');

  const scope = diffQuery([]);
  assert.deepEqual(fieldsOf(scope.sql).sort(), [...SCOPE].sort());
  assert.doesNotMatch(scope.sql, /visit_mileage/);
});

test('poked tables’ diff: the scope, their own fields, no child of a visit placed anew, and with visits whether one was', () => {
  for (const table of FEED_TABLES.filter((t) => t !== 'visits')) {
    const { sql } = tableDiffQuery([table]);
    assert.deepEqual(fieldsOf(sql).sort(), [table, ...SCOPE].sort(), table);
    // The children of visits placed anew (`placed_txid`) come with their visit in the full diff.
    assert.doesNotMatch(sql, /placed_txid/, table);
  }
  assert.match(diffQuery(['visit_mileage']).sql, /placed_txid/, 'the full diff’s part for a child reads the visits placed anew');
  const tap = tableDiffQuery(['visits', 'timer_events']);
  assert.deepEqual(fieldsOf(tap.sql).sort(), ['timer_events', 'visits', ...SCOPE].sort());
  assert.match(tap.sql, /as "placed_anew"/, 'a diff with visits asks whether one was placed anew, to give way to the full diff');
  assert.doesNotMatch(tableDiffQuery(['timer_events']).sql, /placed_anew/);
});

test('a poke names a table the feed reads alone, or none', () => {
  assert.equal(pokeTableOf('visit_mileage'), 'visit_mileage');
  assert.equal(pokeTableOf('ai_transcriptions'), 'ai_status');
  assert.equal(pokeTableOf('visits'), 'visits');
  assert.equal(pokeTableOf('organizations'), null);
  assert.equal(pokeTableOf(''), null);
});

test('each placeholder is one parameter, numbered in order, in every subset', () => {
  const statements = [
    ...[FEED_TABLES, ['visit_mileage'] as const, ['timer_events', 'visits'] as const, [] as const].map((tables) => ({ name: tables.join(', ') || '(none)', ...diffQuery(tables) })),
    ...FEED_TABLES.map((table) => ({ name: `${table} alone`, ...tableDiffQuery([table]) })),
    { name: 'visits and timer_events alone', ...tableDiffQuery(['visits', 'timer_events']) },
  ];
  for (const { name, sql, params } of statements) {
    const used = [...new Set([...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])))].sort((a, b) => a - b);
    assert.deepEqual(used, params.map((_, i) => i + 1), name);
  }
});
