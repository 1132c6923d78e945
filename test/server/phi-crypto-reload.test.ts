import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createPhiCrypto } from '../../server/src/security/phi-crypto.ts';
import { generateKeyFile, rotateKeyFile } from '../../server/src/security/phi-keyring.ts';

test('a value under a key id the re-read file lacks re-reads the file once, not on every decrypt', () => {
  const other = createPhiCrypto(generateKeyFile());
  const foreign = other.seal('secret', 't', 'c', 'row')!;
  const mine = generateKeyFile();
  let reads = 0;
  const phi = createPhiCrypto(mine, {
    reload: () => {
      reads++;
      return mine;
    },
  });
  for (let i = 0; i < 5; i++) assert.throws(() => phi.open(foreign, 't', 'c', 'row'));
  assert.equal(reads, 1);
});

test('a key id a rotation in another process added is picked up from the re-read file', () => {
  const initial = generateKeyFile();
  const rotated = rotateKeyFile(initial);
  const writer = createPhiCrypto(rotated);
  const stored = writer.seal('secret', 't', 'c', 'row')!;
  let reads = 0;
  const phi = createPhiCrypto(initial, {
    reload: () => {
      reads++;
      return rotated;
    },
  });
  assert.equal(phi.open(stored, 't', 'c', 'row'), 'secret');
  assert.equal(phi.open(stored, 't', 'c', 'row'), 'secret');
  assert.equal(reads, 1);
});
