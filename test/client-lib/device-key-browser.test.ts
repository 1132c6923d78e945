/**
 * The browser's device key store (platform/device-key-browser.ts) over an IndexedDB
 * implementation in Node (fake-indexeddb, which stores values by structured clone as browsers
 * do; Node clones CryptoKeys): one non-extractable key per data dir, kept across openings of
 * the store, gone after `wipe`; two tabs that create at once end with one key. Database-
 * independent. The real browser runs the same code in the Chromium test.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IDBFactory } from 'fake-indexeddb';
import { indexedDbKeyStore } from '../../client-lib/src/platform/device-key-browser.ts';
import { aesGcmCipher } from '../../client-lib/src/storage/row-cipher.ts';

const g = globalThis as { indexedDB?: IDBFactory };

async function roundTrip(sealWith: CryptoKey, openWith: CryptoKey): Promise<string> {
  const sealed = await aesGcmCipher(sealWith).seal(new TextEncoder().encode('ok'), 'ad');
  return new TextDecoder().decode(await aesGcmCipher(openWith).open(sealed, 'ad'));
}

test('one non-extractable key per data dir, kept in IndexedDB, gone after wipe', async () => {
  g.indexedDB = new IDBFactory();
  try {
    const store = indexedDbKeyStore('idb://fieldchart');
    assert.equal(await store.load(), null);
    const key = await store.create();
    assert.equal(key.extractable, false);
    await assert.rejects(globalThis.crypto.subtle.exportKey('raw', key));

    // Another opening of the store (a reload) finds the same key.
    const again = await indexedDbKeyStore('idb://fieldchart').load();
    assert.ok(again);
    assert.equal(again.extractable, false);
    assert.equal(await roundTrip(key, again), 'ok');

    const other = await indexedDbKeyStore('idb://other').create();
    await assert.rejects(roundTrip(key, other), 'another data dir, another key');

    await store.wipe();
    assert.equal(await store.load(), null);
    assert.ok(await indexedDbKeyStore('idb://other').load(), 'the other data dir keeps its key');
  } finally {
    delete g.indexedDB;
  }
});

test('two tabs creating the key at once end with one key', async () => {
  g.indexedDB = new IDBFactory();
  try {
    const [a, b] = await Promise.all([indexedDbKeyStore('idb://fieldchart').create(), indexedDbKeyStore('idb://fieldchart').create()]);
    assert.equal(await roundTrip(a, b), 'ok', 'what one tab seals, the other opens');
    const stored = await indexedDbKeyStore('idb://fieldchart').load();
    assert.ok(stored);
    assert.equal(await roundTrip(a, stored), 'ok');
  } finally {
    delete g.indexedDB;
  }
});

test('without IndexedDB the store says so', async () => {
  await assert.rejects(indexedDbKeyStore('idb://fieldchart').load(), /no IndexedDB/);
});
