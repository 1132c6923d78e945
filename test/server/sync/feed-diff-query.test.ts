/**
 * The diff's statement built for some tables (feed.ts `diffQuery`, which bench/feed-diff-tables.ts
 * times): the scope always, the named tables' fields and no other's, each placeholder one parameter.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { diffQuery, FEED_TABLES } from '../../../server/src/services/sync/feed.ts';

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

test('each placeholder is one parameter, numbered in order, in every subset', () => {
  for (const tables of [FEED_TABLES, ['visit_mileage'] as const, ['timer_events', 'visits'] as const, [] as const]) {
    const { sql, params } = diffQuery(tables);
    const used = [...new Set([...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])))].sort((a, b) => a - b);
    assert.deepEqual(used, params.map((_, i) => i + 1), `tables ${tables.join(', ') || '(none)'}`);
  }
});
