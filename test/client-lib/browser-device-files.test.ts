/**
 * PHI on a browser device, in the files Chromium writes: a persistent profile (a user-data dir
 * on disk), the client library on IndexedDB (`idb://`) signed in and synced — a patient whose
 * name and address are canaries, a submitted note and an unsubmitted draft whose texts are
 * canaries — then the browser closed and every file of the profile read. No canary may be in
 * any of them, in any encoding, raw or through the layers Chromium stores IndexedDB in
 * (LevelDB's Snappy-compressed blocks and log records, Snappy-compressed values and blob
 * files: chromium-storage.ts). The search proves it can see: a value the device keeps in
 * clear on the same path (the patient's id, a key column of the local database) is found in
 * the decoded IndexedDB data, so the canaries' absence means they were sealed, not missed.
 *
 * Runs where Debian's Chromium is installed; skipped elsewhere with the reason, except in CI.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { onEmbeddedBackend } from '../helpers/backends.ts';
import { browserMissing, call, launchPersistent, openShell, startPageServer, type PageServer } from '../helpers/browser-page.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { createPatient, scheduleVisit, utcClinician } from '../server/visits/visit-fixtures.ts';
import { storedViews, type StoredView } from './chromium-storage.ts';
import { encodingsOf, filesUnder } from './device-bytes.ts';

/** Where each of `texts` occurs in the views, in any of its encodings. */
function findIn(views: readonly StoredView[], texts: readonly string[]): string[] {
  const needles = texts.flatMap((t) => encodingsOf(t).map((e) => ({ text: t, ...e })));
  return views.flatMap((v) => needles.filter((n) => v.bytes.includes(n.bytes)).map((n) => `${n.text} (${n.how}) in ${v.where}`));
}

const missing = browserMissing();
if (missing) console.log(`# browser tests skipped: ${missing}`);

const TEST = { skip: missing ?? false, timeout: 300_000 };

onEmbeddedBackend('PHI in Chromium’s files', (backend) => {
  let pages: PageServer;
  let server: TestServer;
  before(async () => {
    if (missing) return;
    pages = await startPageServer();
    server = await startTestServer(backend, { env: { CORS_ORIGINS: pages.origin } });
  });
  after(async () => {
    if (missing) return;
    await server?.close();
    await pages?.close();
  });

  test('no canary in any file of the browser profile; a value kept in clear on the same path is found', TEST, async () => {
    const tag = randomUUID().replaceAll('-', '').slice(0, 10);
    const canary = {
      first: `Canaryfirst${tag}`,
      last: `Canarylast${tag}`,
      address: `${tag} Canarywood Lane, Springfield`,
      note: `Canarynote${tag} reports knee pain`,
      draft: `Canarydraft${tag} slept poorly`,
    };
    const day = new Date().toISOString().slice(0, 10);
    const user = await utcClinician(server);
    const patient = await createPatient(server, user, { first_name: canary.first, last_name: canary.last, address: canary.address });
    const noted = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: day, start_time: '09:00' });
    const drafted = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: day, start_time: '11:00' });

    const profile = await launchPersistent();
    try {
      const page = await profile.context.newPage();
      await openShell(page, pages.origin);
      await call(page, 'open', server.url, 'idb://fieldchart-canary');
      await call(page, 'signIn', user.email, user.password);
      await call(page, 'whenSynced', 60_000);
      assert.deepEqual((await call(page, 'today', day)).sort(), [noted, drafted].sort());

      // A note written on the device and submitted: it comes back from the server as the visit's note.
      await call(page, 'type', noted, 'subjective', canary.note);
      await call(page, 'type', noted, 'objective', 'ROM 0-115 degrees.');
      await call(page, 'type', noted, 'assessment', 'Progressing.');
      await call(page, 'type', noted, 'plan', 'Continue HEP.');
      await call(page, 'submit', noted);
      // A draft only typed.
      await call(page, 'type', drafted, 'subjective', canary.draft);
      await call(page, 'whenSynced', 60_000);
      await eventually(async () => assert.equal((await call(page, 'receipt', drafted)).draftOnDeviceOnly, false), { timeoutMs: 30_000, intervalMs: 100 });
      const onServer = await server.api('GET', `/visit-details/${noted}`, { token: user.token });
      assert.equal(onServer.body.data.soap_note?.subjective, canary.note, 'the note reached the server');
      assert.deepEqual(await call(page, 'rejections'), []);
      // The device really holds the canaries (read through the library, decrypted).
      assert.equal((await call(page, 'soap', drafted)).subjective, canary.draft);
      assert.equal((await call(page, 'visit', noted))?.patient?.first_name, canary.first);

      // The library closes its database (PGlite writes its files into IndexedDB), then the browser.
      await call(page, 'close');
      await profile.context.close();

      const files = filesUnder(profile.userDataDir);
      const indexedDb = files.filter((f) => f.file.includes('IndexedDB'));
      assert.ok(indexedDb.length > 0, `IndexedDB files in the profile: ${files.map((f) => f.file).join(', ')}`);
      const views = storedViews(profile.userDataDir);
      const control = findIn(views, [patient.uuid]);
      console.log(`# ${views.length} views of ${files.length} files; the control is in ${control.length}: ${control.join('; ')}`);
      assert.ok(control.some((where) => where.includes('IndexedDB')), `the patient's id, kept in clear, is found in the IndexedDB data (found: ${control.join('; ')})`);
      assert.deepEqual(findIn(views, Object.values(canary)), [], 'no canary in any file of the profile');
    } finally {
      await profile.close();
    }
  });
});
