/**
 * The random pool behind PHI's AES-GCM IVs (security/random-pool.ts): an IV used twice under
 * one key breaks GCM, so no piece may repeat or share bytes with another, across refills.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { createRandomPool } from '../../server/src/security/random-pool.ts';
import { createPhiKeyring } from '../../server/src/security/phi-keyring.ts';

test('pieces have the length asked for, whatever the sequence of lengths, across refills', () => {
  fc.assert(
    fc.property(fc.integer({ min: 16, max: 256 }), fc.array(fc.integer({ min: 0, max: 300 }), { maxLength: 200 }), (size, lengths) => {
      const take = createRandomPool(size);
      for (const n of lengths) assert.equal(take(n).length, n);
    }),
  );
});

test('12-byte pieces never repeat, over many refills of a small pool', () => {
  const take = createRandomPool(64);
  const seen = new Set<string>();
  for (let i = 0; i < 50_000; i++) seen.add(take(12).toString('hex'));
  assert.equal(seen.size, 50_000);
});

test('a piece is a copy: a refill of the pool does not change the pieces handed out', () => {
  const take = createRandomPool(48);
  const first = take(12);
  const kept = Buffer.from(first);
  for (let i = 0; i < 4; i++) take(12); // the fourth refills the pool
  assert.deepEqual(first, kept);
});

test('large requests and bad lengths', () => {
  const take = createRandomPool(64);
  assert.equal(take(1000).length, 1000);
  assert.throws(() => take(-1), RangeError);
  assert.throws(() => take(1.5), RangeError);
});

test('PHI sealed twice has two IVs and opens to the same text', () => {
  const ring = createPhiKeyring({ current: 'k1', keys: [{ id: 'k1', key: Buffer.alloc(32, 7).toString('base64') }], index_key: Buffer.alloc(32, 9).toString('base64') });
  const ivs = new Set<string>();
  for (let i = 0; i < 2_000; i++) {
    const sealed = ring.encrypt('Jane Doe', 'patients.first_name_enc.x');
    ivs.add(sealed.split('.')[2] as string);
    if (i % 500 === 0) assert.equal(ring.decrypt(sealed, 'patients.first_name_enc.x'), 'Jane Doe');
  }
  assert.equal(ivs.size, 2_000);
});
