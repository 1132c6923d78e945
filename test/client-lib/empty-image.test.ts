/**
 * A device's first open from an empty database image (PgliteAssets `loadDataDir`), as the
 * suites' devices open (support.ts openClient): the image goes only into a data dir that holds
 * no database, so a device opened again with it keeps what it holds.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { createFieldchartClient } from '../../client-lib/src/index.ts';
import { emptyDeviceImage } from '../helpers/empty-device-image.ts';
import { ProtocolPeer } from './protocol-peer.ts';
import { openDeviceDb, tempDataDir } from './support.ts';

let peer: ProtocolPeer;
before(async () => {
  peer = await ProtocolPeer.start();
  // Offline throughout: what the device holds is its own.
  peer.onHello = () => 4429;
});
after(async () => {
  await peer.close();
});

const open = async (dataDir: string) =>
  createFieldchartClient({ baseUrl: peer.url, dataDir, backoff: { initialMs: 60_000, maxMs: 60_000 }, pglite: { loadDataDir: await emptyDeviceImage() } });

test('a new data dir starts from the image; opened again with it, the device keeps its session and key', async () => {
  const dir = tempDataDir();
  try {
    assert.equal(fs.existsSync(path.join(dir, 'PG_VERSION')), false);
    const first = await open(dir);
    await first.signInWithTokens({ token: 'token-0', refresh_token: 'refresh-0', expires_in: 3600 });
    assert.equal(first.sync.status.signedIn, true);
    await first.close();
    assert.equal(fs.existsSync(path.join(dir, 'PG_VERSION')), true);

    const again = await open(dir);
    try {
      assert.equal(again.sync.status.signedIn, true, 'the stored session, sealed with the device key, is still there');
    } finally {
      await again.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a device in memory starts from the image each time, empty', async () => {
  for (let i = 0; i < 2; i++) {
    const client = await open('memory://');
    try {
      assert.equal(client.sync.status.signedIn, false);
      await client.signInWithTokens({ token: 'token-0', refresh_token: 'refresh-0', expires_in: 3600 });
      assert.equal(client.sync.status.signedIn, true);
    } finally {
      await client.close();
    }
  }
});

test('the image holds the device’s one database, without the template databases a device never uses', async () => {
  const image = await emptyDeviceImage();
  // Half of initdb's 30.9 MB: each template is as large as the empty database itself.
  assert.ok(image.size < 20 * 1024 * 1024, `the image is ${image.size} bytes`);
  const db = await openDeviceDb('memory://');
  try {
    const rows = await db.query<{ datname: string }>('select datname from pg_database order by datname');
    assert.deepEqual(rows.map((r) => r.datname), ['postgres']);
  } finally {
    await db.close();
  }
});
