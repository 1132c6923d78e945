/**
 * Checklists with no signal: the client matches the visit's note against its discipline's
 * checklist on the device, and answers what the server's `POST /ai/match-checklist` answers
 * for the same text (the same checklists and matcher ship in the package). The draft the
 * clinician is typing is what is checked; the discipline comes from the visit's referral.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { LocalNotFoundError } from '../../client-lib/src/index.ts';
import { noteText } from '../../client-lib/src/model/visit-checklist.ts';
import { forEachBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { utcClinician } from '../server/visits/visit-fixtures.ts';
import { openClient } from './support.ts';

const WAIT = { timeoutMs: 60_000 };
const today = () => new Date().toISOString().slice(0, 10);

forEachBackend('checklists on the device', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('offline, the draft is matched on the device as the server matches the same text; typing closes the gaps', async () => {
    const user = await utcClinician(server);
    const proxy = await startTcpProxy(server.url);
    const client = await openClient(proxy.url);
    try {
      await client.signIn({ email: user.email, password: user.password });
      const items = await server.api('GET', '/ai/checklist/PT', { token: user.token });
      assert.equal(items.status, 200);
      assert.deepEqual(client.checklists.items('pt'), items.body.data, 'the same items as the server, any case');
      assert.equal(client.checklists.items('XX'), null);

      const patient = await client.patients.create({ first_name: 'Ida', last_name: 'Marsh', referral: { discipline: 'PT' } });
      const visit = await client.visits.schedule({ patient_uuid: patient.uuid, visit_date: today(), start_time: '09:00' });
      await client.sync.whenSynced(WAIT);

      proxy.cut();
      await eventually(() => assert.equal(client.sync.status.connected, false), WAIT);

      const empty = await client.checklists.forVisit(visit.uuid);
      assert.equal(empty.source, 'none');
      assert.equal(empty.discipline, 'PT');
      assert.equal(empty.missing.length, Object.keys(empty.matched_items).length, 'nothing written: every item is missing');

      const doc = await client.drafts.open(visit.uuid);
      doc.getText('subjective').insert(0, 'Patient reports pain 4 out of 10 in the right knee.');
      doc.getText('objective').insert(0, 'Ambulated 150 feet with rolling walker, contact guard. Berg balance 41.');
      const draft = await client.checklists.forVisit(visit.uuid);
      assert.equal(draft.source, 'draft');
      const missingIds = draft.missing.map((i) => i.id);
      for (const id of ['functional_mobility', 'balance_strength']) assert.ok(!missingIds.includes(id), `${id} is documented`);
      assert.ok(missingIds.length > 0 && missingIds.length < empty.missing.length);

      // The server, asked about the same text (directly, not through the cut link), agrees item by item.
      const transcript = noteText({ subjective: doc.getText('subjective').toString(), objective: doc.getText('objective').toString() });
      const onServer = await server.api('POST', '/ai/match-checklist', { token: user.token, body: { transcript, discipline: 'PT' } });
      assert.equal(onServer.status, 200, JSON.stringify(onServer.body));
      assert.deepEqual(draft.matched_items, onServer.body.data.matched_items);

      doc.getText('plan').insert(0, 'Continue 2x/week for 4 weeks; caregiver educated on home exercise program.');
      const more = await client.checklists.forVisit(visit.uuid);
      assert.ok(more.missing.length < draft.missing.length, 'the plan closed more gaps');

      const asOt = await client.checklists.forVisit(visit.uuid, { discipline: 'OT' });
      assert.equal(asOt.discipline, 'OT');
      await assert.rejects(client.checklists.forVisit(visit.uuid, { discipline: 'XX' }), (e: unknown) => e instanceof LocalNotFoundError && e.code === 'checklist_not_found');
      await assert.rejects(client.checklists.forVisit(crypto.randomUUID()), (e: unknown) => e instanceof LocalNotFoundError && e.code === 'visit_not_found');

      const bare = await client.patients.create({ first_name: 'No', last_name: 'Referral' });
      const other = await client.visits.schedule({ patient_uuid: bare.uuid, visit_date: today(), start_time: '11:00' });
      await assert.rejects(client.checklists.forVisit(other.uuid), (e: unknown) => e instanceof LocalNotFoundError && e.code === 'discipline_unknown');
    } finally {
      await client.close().catch(() => {});
      await proxy.close();
    }
  });
});
