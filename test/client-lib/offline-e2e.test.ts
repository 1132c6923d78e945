/**
 * The offline client against the real server, offline made real by a TCP proxy: two devices
 * of one clinician edit while cut off, reconnect, and the server ends with the union of their
 * edits exactly once; a device restarted mid-upload resumes from its stored outbox; a replayed
 * or reordered mutation frame is applied once.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { helloSync } from '../helpers/sync-socket.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { createPatient, scheduleVisit, type User, utcClinician } from '../server/visits/visit-fixtures.ts';
import { ev, openClient, tempDataDir } from './support.ts';

const today = () => new Date().toISOString().slice(0, 10);

forEachBackend('offline client end to end', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  async function draftRows(visitId: string): Promise<number> {
    const { pglite, sql } = server.runtime.database;
    const query = 'select count(*)::int as n from draft_updates where visit_id = $1';
    const rows = pglite ? (await pglite.query<{ n: number }>(query, [visitId])).rows : await sql!.unsafe<Array<{ n: number }>>(query, [visitId]);
    return rows[0]?.n ?? -1;
  }

  const clinician = (): Promise<User> => utcClinician(server);

  test('two devices edit offline, one restarts mid-upload; the server gets the union of the edits exactly once', async () => {
    const user = await clinician();
    const patient = await createPatient(server, user);
    const visitId = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today(), start_time: '09:00' });
    const proxyA: TcpProxy = await startTcpProxy(server.url);
    const proxyB: TcpProxy = await startTcpProxy(server.url);
    const dirB = tempDataDir();
    const a = await openClient(proxyA.url, 'memory://', { submitWaitMs: 60_000 });
    let b = await openClient(proxyB.url, dirB, { submitWaitMs: 60_000 });
    try {
      await a.signIn({ email: user.email, password: user.password });
      await b.signIn({ email: user.email, password: user.password });
      await a.sync.whenSynced({ timeoutMs: 30_000 });
      await b.sync.whenSynced({ timeoutMs: 30_000 });
      assert.deepEqual((await a.visits.today({ date: today() })).map((v) => v.uuid), [visitId]);

      proxyA.cut();
      proxyB.cut();
      await eventually(() => assert.ok(!a.sync.status.connected && !b.sync.status.connected, JSON.stringify({ a: a.sync.status, b: b.sync.status })), { timeoutMs: 20_000 });

      // Device A: the timer, and the subjective section.
      await a.visits.recordTimerEvents(visitId, [ev('start_travel', `${today()}T08:30:00.000Z`), ev('arrive', `${today()}T09:00:00.000Z`)]);
      const docA = await a.drafts.open(visitId);
      docA.getText('subjective').insert(0, 'Reports less knee pain.');
      // Device B: mileage, a new patient with a visit, and the plan section.
      await b.visits.setMileage(visitId, { total_miles: 18.4, travel_miles: 17 });
      const created = await b.patients.create({ first_name: 'Offline', last_name: 'Created' });
      const newVisit = await b.visits.schedule({ patient_uuid: created.uuid, visit_date: today(), start_time: '13:00' });
      const docB = await b.drafts.open(visitId);
      docB.getText('plan').insert(0, 'Continue HEP twice daily.');
      assert.equal((await a.visits.receipt(visitId)).state, 'on_device');
      assert.equal((await b.visits.get(newVisit.uuid))?.patient?.last_name, 'Created', 'shown before the server has it');

      // B comes back and is closed as soon as it reconnects: mid-upload. Reopened on its directory.
      proxyB.restore();
      await eventually(() => assert.ok(b.sync.status.connected, JSON.stringify(b.sync.status)), { timeoutMs: 20_000 });
      await b.close();
      b = await openClient(proxyB.url, dirB, { submitWaitMs: 60_000 });
      assert.equal(b.sync.status.signedIn, true, 'the stored session resumes');
      await b.drafts.open(visitId);
      await b.sync.whenSynced({ timeoutMs: 30_000 });

      proxyA.restore();
      await a.sync.whenSynced({ timeoutMs: 30_000 });
      await b.sync.whenSynced({ timeoutMs: 30_000 });

      const details = await server.api('GET', `/visit-details/${visitId}`, { token: user.token });
      assert.equal(details.status, 200, JSON.stringify(details.body));
      assert.deepEqual(
        details.body.data.timer_events.map((e: { event_type: string }) => e.event_type),
        ['start_travel', 'arrive'],
      );
      assert.equal(details.body.data.mileage.total_miles, 18.4);
      assert.equal(details.body.data.status, 'in_progress');
      const mine = await server.api('GET', '/patient/my-patients?per_page=100', { token: user.token });
      assert.equal(mine.status, 200, JSON.stringify(mine.body));
      const createdRows = JSON.stringify(mine.body).split(created.uuid).length - 1;
      assert.ok(createdRows >= 1, 'the patient created offline exists');
      const newDetails = await server.api('GET', `/visit-details/${newVisit.uuid}`, { token: user.token });
      assert.equal(newDetails.status, 200, 'the visit scheduled offline exists under the device id');

      // Both drafts converge on both sections; each device shows the server's rows now.
      await eventually(() => {
        assert.equal(docA.getText('plan').toString(), 'Continue HEP twice daily.');
        assert.equal(docA.getText('subjective').toString(), 'Reports less knee pain.');
      }, { timeoutMs: 20_000 });
      await eventually(async () => {
        const seenByA = await a.visits.get(visitId);
        assert.equal(seenByA?.mileage?.total_miles, 18.4);
        assert.equal(seenByA?.timer_events.length, 2);
      }, { timeoutMs: 20_000 });
      assert.equal((await a.visits.receipt(visitId)).state, 'acknowledged');

      // The note goes after the draft, without sections: the server takes the merged text.
      docA.getText('objective').insert(0, 'ROM 0-115 degrees.');
      docA.getText('assessment').insert(0, 'Progressing toward goals.');
      await a.notes.submit(visitId, { vital_signs: { heart_rate: 72 } });
      await a.sync.whenSynced({ timeoutMs: 30_000 });
      assert.deepEqual(await a.rejections.list(), []);
      const done = await server.api('GET', `/visit-details/${visitId}`, { token: user.token });
      assert.equal(done.body.data.status, 'completed');
      assert.equal(done.body.data.soap_note.subjective, 'Reports less knee pain.');
      assert.equal(done.body.data.soap_note.plan, 'Continue HEP twice daily.');
      assert.equal(done.body.data.soap_note.objective, 'ROM 0-115 degrees.');
      // The submitted note supersedes the draft: its updates are not kept.
      assert.equal(await draftRows(visitId), 0);
    } finally {
      await a.close();
      await b.close();
      await proxyA.close();
      await proxyB.close();
      fs.rmSync(dirB, { recursive: true, force: true });
    }
  });

  test('a replayed mutation frame is acknowledged and applied once; an id behind the stream is not applied', async () => {
    const user = await clinician();
    const clientId = randomUUID();
    const { socket } = await helloSync(server, user.token, clientId);
    const p1 = randomUUID();
    const p2 = randomUUID();
    const p3 = randomUUID();
    const frame = (id: number, uuid: string) => ({
      type: 'mutation',
      mutation_id: id,
      name: 'patient.create',
      args: { uuid, first_name: 'Replay', last_name: `P${id}` },
      client_time: new Date().toISOString(),
    });
    socket.send(frame(1, p1));
    socket.send(frame(1, p1)); // duplicated frame
    socket.send(frame(3, p3));
    socket.send(frame(2, p2)); // reordered: behind the stream
    await socket.next('ack', (m) => m.mutation_id === 1);
    const dup = await socket.next('ack', (m) => m.mutation_id === 1);
    assert.deepEqual(dup.result, { duplicate: true });
    await socket.next('ack', (m) => m.mutation_id === 3);
    const behind = await socket.next('ack', (m) => m.mutation_id === 2);
    assert.deepEqual(behind.result, { duplicate: true });
    socket.close();
    const list = await server.api('GET', '/patient/my-patients?per_page=100', { token: user.token });
    const text = JSON.stringify(list.body);
    assert.equal(text.split(p1).length - 1 >= 1, true);
    assert.equal(text.includes(p2), false, 'an id behind last_mutation_id is never applied');
    // A device's client never sends out of order; a new hello says where the server stands.
    const { socket: again, welcome } = await helloSync(server, user.token, clientId);
    assert.equal(welcome.last_mutation_id, 3);
    again.close();
  });
});
