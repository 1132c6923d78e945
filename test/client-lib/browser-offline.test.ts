/**
 * `@fieldchart/client` in Chromium (test/helpers/browser-page.ts): its browser build with PGlite
 * on IndexedDB (`idb://`), against the real server on each backend. The page goes offline with
 * `context.setOffline(true)`, records a visit's timer and mileage and types its draft, is
 * reloaded while offline and finds everything in IndexedDB, comes back, and the server gets
 * every change once. Two browser contexts (two devices of one clinician) editing one draft,
 * online and across one's offline spell, converge.
 *
 * Runs where Debian's Chromium is installed; skipped elsewhere with the reason, except in CI
 * (CI=true), where a missing Chromium fails the file.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { forEachBackend } from '../helpers/backends.ts';
import { browserMissing, call, launchChromium, launchPersistent, openShell, startPageServer, type PageServer } from '../helpers/browser-page.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { createPatient, scheduleVisit, type User, utcClinician } from '../server/visits/visit-fixtures.ts';
import { ev } from './support.ts';

const missing = browserMissing();
if (missing) console.log(`# browser tests skipped: ${missing}`);

const today = () => new Date().toISOString().slice(0, 10);
// A guard against a hang, far above the ~30 s each test takes here: CI runs two files at once on 2 cores.
const TEST = { skip: missing ?? false, timeout: 300_000 };

forEachBackend('the client library in Chromium', (backend) => {
  let pages: PageServer;
  let server: TestServer;
  let browser: Browser;
  before(async () => {
    if (missing) return;
    pages = await startPageServer();
    // The page's origin calls the API cross-origin, as an app served from its own host does.
    server = await startTestServer(backend, { env: { CORS_ORIGINS: pages.origin } });
    browser = await launchChromium();
  });
  after(async () => {
    if (missing) return;
    await browser?.close();
    await server?.close();
    await pages?.close();
  });

  /** One date for the whole test: a run across midnight UTC keeps its visit's day. */
  async function visitForToday(): Promise<{ user: User; visitId: string; day: string }> {
    const day = today();
    const user = await utcClinician(server);
    const patient = await createPatient(server, user);
    const visitId = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: day, start_time: '09:00' });
    return { user, visitId, day };
  }

  async function details(user: User, visitId: string) {
    const res = await server.api('GET', `/visit-details/${visitId}`, { token: user.token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.data;
  }

  /** A signed-in client on a freshly loaded page, synced with the server. */
  async function signedInPage(context: BrowserContext, user: User, dataDir: string): Promise<Page> {
    const page = await context.newPage();
    await openShell(page, pages.origin);
    await call(page, 'open', server.url, dataDir);
    await call(page, 'signIn', user.email, user.password);
    await call(page, 'whenSynced', 60_000);
    return page;
  }

  /**
   * The page is cut off. Chromium's offline mode fails new sockets and fetches but leaves an
   * open socket open: the client drops it itself on the browser's `offline` event.
   */
  async function disconnected(page: Page): Promise<void> {
    await eventually(async () => {
      const status = await call(page, 'status');
      assert.equal(status.connected, false, JSON.stringify(status));
      assert.equal(status.lastError?.code, 'offline', JSON.stringify(status));
    }, { timeoutMs: 20_000, intervalMs: 100 });
  }

  test('offline in the browser: timer, mileage and draft survive a reload from IndexedDB and reach the server once', TEST, async () => {
    const { user, visitId, day } = await visitForToday();
    // A persistent profile on a new, empty user-data dir: IndexedDB is files on disk.
    const profile = await launchPersistent();
    try {
      const page = await signedInPage(profile.context, user, 'idb://fieldchart-offline');
      assert.ok((await call(page, 'marks')).includes('fieldchart:db-from-image'), 'a new IndexedDB database starts from the empty image, not initdb');
      assert.deepEqual(await call(page, 'today', day), [visitId]);
      assert.equal((await call(page, 'status')).connected, true);

      await profile.context.setOffline(true);
      await disconnected(page);

      await call(page, 'recordTimerEvents', visitId, [ev('start_travel', `${day}T08:30:00.000Z`), ev('arrive', `${day}T09:00:00.000Z`)]);
      await call(page, 'setMileage', visitId, { total_miles: 18.4, travel_miles: 17 });
      await call(page, 'type', visitId, 'subjective', 'Reports less knee pain.');
      await call(page, 'type', visitId, 'plan', 'Continue HEP twice daily.');
      // "On this phone": the writes are queued and the draft's edits stored, none confirmed.
      await eventually(async () => {
        const receipt = await call(page, 'receipt', visitId);
        assert.equal(receipt.state, 'on_device');
        assert.equal(receipt.pendingMutations, 2);
        assert.equal(receipt.draftOnDeviceOnly, true);
      }, { timeoutMs: 20_000, intervalMs: 100 });
      const offlineOnServer = await details(user, visitId);
      assert.deepEqual(offlineOnServer.timer_events, [], 'the page really was cut off');

      // Reloaded while offline: the shell comes from the service worker, the data from IndexedDB.
      await page.reload({ timeout: 60_000 });
      await openShell(page, pages.origin).catch(async (err: unknown) => {
        throw new Error(`the page did not load offline: ${String(err)}`);
      });
      const reopened = await call(page, 'open', server.url, 'idb://fieldchart-offline');
      assert.equal(reopened.signedIn, true, 'the stored session survived the reload');
      assert.ok(!(await call(page, 'marks')).includes('fieldchart:db-from-image'), 'the image is not loaded over the database IndexedDB holds');
      assert.equal(reopened.pending, 2, JSON.stringify(reopened));
      await disconnected(page);
      const visit = await call(page, 'visit', visitId);
      assert.deepEqual(visit?.timer_events.map((e) => e.event_type), ['start_travel', 'arrive']);
      assert.equal(visit?.mileage?.total_miles, 18.4);
      const soap = await call(page, 'soap', visitId);
      assert.equal(soap.subjective, 'Reports less knee pain.');
      assert.equal(soap.plan, 'Continue HEP twice daily.');
      assert.equal((await call(page, 'receipt', visitId)).state, 'on_device');

      await profile.context.setOffline(false);
      await call(page, 'whenSynced', 60_000);
      assert.equal((await call(page, 'status')).connected, true);
      await eventually(async () => assert.equal((await call(page, 'receipt', visitId)).state, 'acknowledged'), { timeoutMs: 30_000, intervalMs: 100 });

      const online = await details(user, visitId);
      assert.deepEqual(online.timer_events.map((e: { event_type: string }) => e.event_type), ['start_travel', 'arrive'], 'each timer event once');
      assert.equal(online.mileage.total_miles, 18.4);
      assert.equal(online.status, 'in_progress');
      // The server's copy of the draft: the note takes its sections from it (all four filled).
      await call(page, 'type', visitId, 'objective', 'ROM 0-115 degrees.');
      await call(page, 'type', visitId, 'assessment', 'Progressing toward goals.');
      await call(page, 'submit', visitId);
      await call(page, 'whenSynced', 60_000);
      assert.deepEqual(await call(page, 'rejections'), []);
      assert.deepEqual(await call(page, 'failures'), []);
      const done = await details(user, visitId);
      assert.equal(done.status, 'completed');
      assert.equal(done.soap_note.subjective, 'Reports less knee pain.', 'typed once, arrived once');
      assert.equal(done.soap_note.plan, 'Continue HEP twice daily.');
      assert.equal(done.timer_events.length, 2);
    } finally {
      await profile.close();
    }
  });

  test('two browser contexts editing one draft converge, online and after one was offline', TEST, async () => {
    const { user, visitId } = await visitForToday();
    const contextA = await browser.newContext();
    const contextB = await browser.newContext();
    try {
      const a = await signedInPage(contextA, user, 'idb://fieldchart-a');
      const b = await signedInPage(contextB, user, 'idb://fieldchart-b');
      await call(a, 'type', visitId, 'subjective', 'Knee pain 3/10.');
      await call(b, 'type', visitId, 'plan', 'Ice after exercise.');
      await eventually(async () => {
        const [sa, sb] = [await call(a, 'soap', visitId), await call(b, 'soap', visitId)];
        assert.deepEqual(sa, sb);
        assert.equal(sa.subjective, 'Knee pain 3/10.');
        assert.equal(sa.plan, 'Ice after exercise.');
      }, { timeoutMs: 30_000, intervalMs: 100 });

      await contextB.setOffline(true);
      await disconnected(b);
      // The same section edited on both sides while B is cut off.
      await call(a, 'type', visitId, 'subjective', ' Swelling down.');
      await call(b, 'type', visitId, 'subjective', ' Slept well.');
      await call(b, 'type', visitId, 'assessment', 'Improving.');
      await eventually(async () => assert.equal((await call(a, 'receipt', visitId)).draftOnDeviceOnly, false), { timeoutMs: 30_000, intervalMs: 100 });
      assert.equal((await call(b, 'soap', visitId)).subjective, 'Knee pain 3/10. Slept well.', 'B saw nothing of A while offline');

      await contextB.setOffline(false);
      await call(b, 'whenSynced', 60_000);
      const converged = await eventually(async () => {
        const [sa, sb] = [await call(a, 'soap', visitId), await call(b, 'soap', visitId)];
        assert.deepEqual(sa, sb);
        assert.equal(sa.assessment, 'Improving.');
        return sa;
      }, { timeoutMs: 30_000, intervalMs: 100 });
      // Both insertions, each once, in one order both sides agree on.
      assert.ok(
        ['Knee pain 3/10. Swelling down. Slept well.', 'Knee pain 3/10. Slept well. Swelling down.'].includes(converged.subjective),
        converged.subjective,
      );

      await call(a, 'type', visitId, 'objective', 'Gait steady.');
      await call(a, 'submit', visitId);
      await call(a, 'whenSynced', 60_000);
      assert.deepEqual(await call(a, 'rejections'), []);
      assert.deepEqual(await call(a, 'failures'), []);
      const done = await details(user, visitId);
      assert.equal(done.soap_note.subjective, converged.subjective);
      assert.equal(done.soap_note.plan, 'Ice after exercise.');
      assert.equal(done.soap_note.assessment, 'Improving.');
    } finally {
      await contextA.close();
      await contextB.close();
    }
  });
});
