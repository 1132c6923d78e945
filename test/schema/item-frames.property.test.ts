/**
 * `ItemFrames`, the cut both sides of the sync channel share (docs/sync-protocol.md, Limits):
 * every item once, in order; no frame over its count or its size unless it holds one item alone;
 * and a frame cut only when the next item would not fit in it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { ItemFrames, type FrameLimits } from '@fieldchart/schema/sync';

test('ItemFrames: every item once and in order, within the limits, each frame as full as the next item allows', () => {
  fc.assert(
    fc.property(
      fc.array(fc.string({ unit: 'grapheme', maxLength: 40 }), { maxLength: 60 }),
      fc.integer({ min: 1, max: 8 }),
      fc.integer({ min: 1, max: 120 }),
      fc.boolean(),
      (texts, maxItems, maxSize, utf8) => {
        const limits: FrameLimits = { maxItems, maxSize, size: utf8 ? (json) => Buffer.byteLength(json) : (json) => json.length };
        const frames: Array<{ text: string; items: number }> = [];
        const cut = new ItemFrames(limits, (items) => `[${items}]`, (text, items) => frames.push({ text, items }));
        const items = texts.map((t) => JSON.stringify(t));
        for (const item of items) cut.add(item);
        cut.flush();
        cut.flush(); // nothing left: no empty frame

        const parsed = frames.map((f) => JSON.parse(f.text) as string[]);
        assert.deepEqual(parsed.flat(), texts, 'every item once, in order');
        parsed.forEach((list, k) => {
          assert.equal(frames[k]?.items, list.length, 'send is told how many items the frame holds');
          assert.ok(list.length >= 1 && list.length <= maxItems, `frame ${k}: ${list.length} items`);
          const size = list.reduce((sum, t) => sum + limits.size(JSON.stringify(t)), 0);
          assert.ok(list.length === 1 || size <= maxSize, `frame ${k}: size ${size} over ${maxSize} with ${list.length} items`);
          const next = parsed[k + 1]?.[0];
          if (next !== undefined) {
            const fits = list.length < maxItems && size + limits.size(JSON.stringify(next)) <= maxSize;
            assert.ok(!fits, `frame ${k} was cut though the next item fitted`);
          }
        });
      },
    ),
    { numRuns: 300 },
  );
});

test('ItemFrames.take wraps what is left in another frame and starts again empty', () => {
  const sent: string[] = [];
  const cut = new ItemFrames({ maxItems: 2, maxSize: 100, size: (json) => json.length }, (items) => `[${items}]`, (text) => sent.push(text));
  for (const n of [1, 2, 3]) cut.add(String(n));
  assert.deepEqual(sent, ['[1,2]']);
  assert.equal(cut.take((items) => `{"last":[${items}]}`), '{"last":[3]}');
  assert.equal(cut.take(), '[]', 'nothing left after a take');
  cut.flush();
  assert.deepEqual(sent, ['[1,2]'], 'a flush with nothing left sends nothing');
});
