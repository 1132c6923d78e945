/**
 * PHI on the device, against the real server: canary values planted through the client's
 * normal flows (a patient created and synced, a visit with notes, a draft, a write still in the
 * outbox) are found in no stored byte of the data directory — in any common encoding — once
 * the client is closed; the key file is 0600; reopened, the client reads them all back. After
 * sign-out the device key is replaced: the old key's bytes are gone, and so is every canary.
 * A device whose account is disabled on the server wipes itself when it next connects, and
 * uploads nothing further.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { KEY_FILE } from '../../client-lib/src/platform/device-key-node.ts';
import { forEachBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { utcClinician } from '../server/visits/visit-fixtures.ts';
import { findBytes, findTexts } from './device-bytes.ts';
import { openClient, tempDataDir } from './support.ts';

const WAIT = { timeoutMs: 60_000 };
const today = () => new Date().toISOString().slice(0, 10);

forEachBackend('PHI on the device', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('canaries planted through the client are in no stored byte; the client reads them back; sign-out leaves none and a new key', async () => {
    const user = await utcClinician(server);
    const tag = randomUUID().replaceAll('-', '').slice(0, 10);
    const canary = {
      first: `Quillaby${tag}`,
      last: `Thornwhistle${tag}`,
      address: `77 Canarywood Lane ${tag}`,
      phone: `+1 312 555 ${tag.slice(0, 4)}x${tag.slice(4)}`,
      visitNote: `Gate code canary ${tag}`,
      draft: `Knee flexion canary ${tag}`,
      pendingPhone: `+1 773 555 ${tag.slice(0, 4)}y${tag.slice(4)}`,
    };
    const all = Object.values(canary);
    const proxy = await startTcpProxy(server.url);
    const dir = tempDataDir();
    let client = await openClient(proxy.url, dir, { submitWaitMs: 60_000 });
    try {
      await client.signIn({ email: user.email, password: user.password });
      const patient = await client.patients.create({ first_name: canary.first, last_name: canary.last, address: canary.address, phone: canary.phone });
      const visit = await client.visits.schedule({ patient_uuid: patient.uuid, visit_date: today(), start_time: '10:00', notes: canary.visitNote });
      const doc = await client.drafts.open(visit.uuid);
      doc.getText('plan').insert(0, canary.draft);
      await client.sync.whenSynced(WAIT);
      await eventually(async () => assert.equal((await client.visits.receipt(visit.uuid)).state, 'acknowledged'), WAIT);

      // Offline, one more write waits in the outbox.
      proxy.cut();
      await eventually(() => assert.equal(client.sync.status.connected, false), WAIT);
      await client.patients.update(patient.uuid, { phone: canary.pendingPhone });
      assert.equal(client.sync.status.pending, 1);
      await client.close();

      assert.deepEqual(findTexts(dir, all), [], 'no canary in the data dir');
      const keyFile = path.join(dir, KEY_FILE);
      assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600, 'the key file is 0600');
      const oldKey = fs.readFileSync(keyFile);
      assert.equal(oldKey.length, 32);

      // Reopened (still offline): everything reads back, the pending write included.
      client = await openClient(proxy.url, dir, { submitWaitMs: 60_000 });
      const p = await client.patients.get(patient.uuid);
      assert.deepEqual(
        { first: p?.first_name, last: p?.last_name, address: p?.address, phone: p?.phone },
        { first: canary.first, last: canary.last, address: canary.address, phone: canary.pendingPhone },
      );
      assert.equal((await client.visits.get(visit.uuid))?.notes, canary.visitNote);
      assert.equal((await client.drafts.open(visit.uuid)).getText('plan').toString(), canary.draft);
      assert.equal(client.sync.status.pending, 1);

      // Back online, the write arrives; then sign-out.
      proxy.restore();
      await client.sync.whenSynced(WAIT);
      const onServer = await server.api('GET', '/patient/my-patients?per_page=50', { token: user.token });
      assert.equal(onServer.status, 200, JSON.stringify(onServer.body));
      const row = (onServer.body.data as { uuid: string; phone: string | null }[]).find((x) => x.uuid === patient.uuid);
      assert.equal(row?.phone, canary.pendingPhone);
      await client.signOut();
      await client.close();

      assert.deepEqual(findTexts(dir, all), [], 'no canary after sign-out');
      assert.deepEqual(findBytes(dir, oldKey), [], 'the old key is nowhere');
      const newKey = fs.readFileSync(keyFile);
      assert.equal(newKey.length, 32);
      assert.notDeepEqual(newKey, oldKey, 'a new key');
      assert.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
    } finally {
      await client.close().catch(() => {});
      await proxy.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  // Disabled by the operator, every session of the account is revoked too: the device, offline
  // then, hears it from its hello or its refresh (as account_disabled, not as a forgotten token).
  const disablings = {
    'in the database': (userId: string) => server.runtime.database.db.execute(sql`update users set disabled_at = now() where id = ${userId}`),
    'by the operator': (userId: string) => server.runtime.services.users.setDisabled(userId, true),
  };
  for (const [how, disable] of Object.entries(disablings)) test(`a device whose account was disabled (${how}) wipes itself on its next connection, uploading nothing further`, async () => {
    const user = await utcClinician(server);
    const tag = randomUUID().replaceAll('-', '').slice(0, 10);
    const canary = { first: `Revokaby${tag}`, phone: `+1 312 555 ${tag.slice(0, 4)}r${tag.slice(4)}`, pendingPhone: `+1 773 555 ${tag.slice(0, 4)}z${tag.slice(4)}` };
    const proxy = await startTcpProxy(server.url);
    const dir = tempDataDir();
    const client = await openClient(proxy.url, dir, { submitWaitMs: 60_000 });
    try {
      await client.signIn({ email: user.email, password: user.password });
      const patient = await client.patients.create({ first_name: canary.first, last_name: 'Canary', phone: canary.phone });
      await client.sync.whenSynced(WAIT);
      const oldKey = fs.readFileSync(path.join(dir, KEY_FILE));

      proxy.cut();
      await eventually(() => assert.equal(client.sync.status.connected, false), WAIT);
      await client.patients.update(patient.uuid, { phone: canary.pendingPhone });
      assert.equal(client.sync.status.pending, 1);
      await disable(user.uuid);

      proxy.restore();
      await eventually(() => assert.equal(client.sync.status.halted, 'account_disabled'), WAIT);
      await eventually(async () => {
        assert.deepEqual(await client.patients.list(), []);
        assert.equal(client.sync.status.pending, 0);
      }, WAIT);
      assert.equal(client.sync.status.signedIn, false);
      await client.close();
      assert.deepEqual(findTexts(dir, Object.values(canary)), [], 'no canary left on the device');
      assert.deepEqual(findBytes(dir, oldKey), [], 'the old key is nowhere');

      // The queued write never reached the server.
      await server.runtime.database.db.execute(sql`update users set disabled_at = null where id = ${user.uuid}`);
      const signIn = await server.api('POST', '/sign-in', { body: { email: user.email, password: user.password } });
      assert.equal(signIn.status, 200, JSON.stringify(signIn.body));
      const mine = await server.api('GET', '/patient/my-patients?per_page=50', { token: signIn.body.data.token as string });
      const row = (mine.body.data as { uuid: string; phone: string | null }[]).find((x) => x.uuid === patient.uuid);
      assert.equal(row?.phone, canary.phone);
    } finally {
      await client.close().catch(() => {});
      await proxy.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
