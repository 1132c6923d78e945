/**
 * The protocol a device steps down to after a 4426 (schema/src/sync/versions.ts): the server's
 * close reason names its versions, and the device says the highest one both speak, strictly
 * below what it said, or stops.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { SUPPORTED_PROTOCOLS, protocolAfterRefusal, protocolUnsupportedReason, protocolsNamedIn } from '@fieldchart/schema/sync';

test('the close reason names the versions it was written with, and nothing else reads as one', () => {
  assert.deepEqual(protocolsNamedIn(protocolUnsupportedReason()), [...SUPPORTED_PROTOCOLS]);
  // What servers of protocols 2 and 3 wrote, read by this release's devices.
  assert.deepEqual(protocolsNamedIn('This server speaks protocols 1, 2, 3'), [1, 2, 3]);
  assert.deepEqual(protocolsNamedIn('This server speaks protocols 1, 2'), [1, 2]);
  for (const reason of ['', 'closed', 'update the app', 'protocols', 'protocol 0', 'protocols -1, x, 1e3']) {
    assert.deepEqual(protocolsNamedIn(reason), [], reason);
  }
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 1, max: 999_999 }), { minLength: 1, maxLength: 12 }), (spoken) => {
      assert.deepEqual(protocolsNamedIn(protocolUnsupportedReason(spoken)), spoken);
    }),
  );
});

test('a device steps down to the highest version both speak below the refused one, or to none', () => {
  assert.equal(protocolAfterRefusal(4, [1, 2, 3]), 3);
  assert.equal(protocolAfterRefusal(4, [1, 2]), 2);
  assert.equal(protocolAfterRefusal(4, [5, 6]), null, 'a server newer than the app: update the app');
  assert.equal(protocolAfterRefusal(4, []), null, 'a reason that names nothing');
  assert.equal(protocolAfterRefusal(3, [1, 2, 3, 4]), 2, 'a server that refused what it named: never the same again');
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 12 }),
      fc.uniqueArray(fc.integer({ min: 1, max: 12 })),
      fc.uniqueArray(fc.integer({ min: 1, max: 12 })),
      (said, named, spoken) => {
        const next = protocolAfterRefusal(said, named, spoken);
        const both = spoken.filter((v) => named.includes(v) && v < said);
        if (next === null) return assert.equal(both.length, 0);
        assert.ok(next < said && named.includes(next) && spoken.includes(next));
        assert.ok(both.every((v) => v <= next));
      },
    ),
  );
});
