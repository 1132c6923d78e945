/**
 * A network that passes HTTP but not websockets (the device's sync URL answers no upgrade):
 * the client drains its outbox over `POST /sync/mutations` — applied once, rejections
 * surfaced — and when the socket works again it carries on from the same counter.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { createFieldchartClient } from '@fieldchart/client';
import { forEachBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { API, registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { createPatient, scheduleVisit } from '../server/visits/visit-fixtures.ts';
import { ev, tempDataDir } from './support.ts';
import { emptyDeviceImage } from '../helpers/empty-device-image.ts';

const today = () => new Date().toISOString().slice(0, 10);

forEachBackend('offline client: mutations over HTTP when websockets are blocked', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('the outbox drains over HTTP, exactly once, and the socket continues from there', async () => {
    const user = await registerUser(server);
    const patient = await createPatient(server, user);
    const visitId = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today(), start_time: '09:00' });
    // Upgrades to this path fail (404): what a proxy that strips websockets looks like.
    const blocked = `${server.url.replace(/^http/, 'ws')}${API}/no-websockets-here`;
    const dataDir = tempDataDir();
    const open = async (syncUrl?: string) =>
      createFieldchartClient({ baseUrl: server.url, dataDir, pglite: { loadDataDir: await emptyDeviceImage() }, backoff: { initialMs: 40, maxMs: 200 }, ...(syncUrl ? { syncUrl } : {}) });
    // First on a good network: the device learns its visits.
    const first = await open();
    await first.signIn({ email: user.email, password: user.password });
    await first.sync.whenSynced({ timeoutMs: 30_000 });
    await first.close();

    const client = await open(blocked);
    try {
      const newPatient = randomUUID();
      await client.patients.create({ uuid: newPatient, first_name: 'Ines', last_name: 'Okoro' });
      await client.visits.recordTimerEvents(visitId, [ev('start_travel', `${today()}T08:30:00.000Z`)]);
      await client.visits.setMileage(visitId, { total_miles: 11.5 });
      // Refused by the server (another clinician's patient holds that id): surfaced, not retried.
      const other = await registerUser(server);
      const taken = await createPatient(server, other);
      await client.patients.create({ uuid: taken.uuid, first_name: 'Dup', last_name: 'Licate' });

      await eventually(async () => assert.equal(client.sync.status.pending, 0), { timeoutMs: 30_000 });
      assert.equal(client.sync.status.connected, false, 'never connected by websocket');
      const details = await server.api('GET', `/visit-details/${visitId}`, { token: user.token });
      assert.equal(details.body.data.timer_events.length, 1);
      assert.equal(details.body.data.mileage.total_miles, 11.5);
      const mine = await server.api('GET', '/patient/my-patients', { token: user.token });
      assert.deepEqual(mine.body.data.map((p: { uuid: string }) => p.uuid).sort(), [patient.uuid, newPatient].sort());
      const rejections = await client.rejections.list();
      assert.deepEqual(rejections.map((r) => [r.name, r.status, r.code]), [['patient.create', 409, 'id_taken']]);
      const receipt = await client.visits.receipt(visitId);
      assert.equal(receipt.state, 'acknowledged');
    } finally {
      await client.close();
    }

    // Websockets work again: the socket continues from the same counter, nothing is re-applied.
    const back = await open();
    try {
      await back.sync.whenSynced({ timeoutMs: 30_000 });
      const details = await server.api('GET', `/visit-details/${visitId}`, { token: user.token });
      assert.equal(details.body.data.timer_events.length, 1);
      assert.equal((await back.visits.get(visitId))?.mileage?.total_miles, 11.5);
    } finally {
      await back.close();
    }
  });
});
