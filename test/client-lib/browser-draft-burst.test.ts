/**
 * Fast typing in Chromium, then an offline reload: every keystroke is on the device (issue 13).
 *
 * Each keystroke is one Yjs update. Stored one transaction each, they queued behind each other
 * at ~0.1 s apiece (every write copies PGlite's changed files to IndexedDB), so a burst of
 * typing sat in memory for seconds and a reload lost its tail; and PGlite did not persist a
 * transaction at its COMMIT, only with the next statement. The draft store now writes what
 * queued up in one transaction and the device database persists each transaction as it ends.
 *
 * Runs where Debian's Chromium is installed; skipped elsewhere with the reason, except in CI.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { onEmbeddedBackend } from '../helpers/backends.ts';
import { browserMissing, call, launchPersistent, openShell, startPageServer, type PageServer } from '../helpers/browser-page.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { createPatient, scheduleVisit, utcClinician } from '../server/visits/visit-fixtures.ts';
import type { Harness } from '../fixtures/browser-client/page.ts';
import { ev } from './support.ts';

const missing = browserMissing();
if (missing) console.log(`# browser tests skipped: ${missing}`);

const TEST = { skip: missing ?? false, timeout: 120_000 };

/** Per section: 16 keystrokes, 64 in all — over 6 s of queued writes before the fix. */
const TYPED = {
  subjective: 'Less knee pain. ',
  objective: 'ROM 0-110 deg., ',
  assessment: 'Improving well. ',
  plan: 'Continue HEP x2.',
} as const;

/**
 * How long the user pauses between the last keystroke and the reload. A pause, not a wait for
 * a state: nothing tells a user that the device has the text, and closing a tab a second after
 * typing must not lose it.
 */
const PAUSE_MS = 1_500;

onEmbeddedBackend('draft keystrokes in Chromium', (backend) => {
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

  test('keystrokes in four sections and a timer event, fired without waiting, all survive an offline reload', TEST, async () => {
    const day = new Date().toISOString().slice(0, 10);
    const user = await utcClinician(server);
    const patient = await createPatient(server, user);
    const visitId = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: day, start_time: '09:00' });
    const profile = await launchPersistent();
    try {
      const page = await profile.context.newPage();
      await openShell(page, pages.origin);
      await call(page, 'open', server.url, 'idb://burst');
      await call(page, 'signIn', user.email, user.password);
      await call(page, 'whenSynced', 60_000);
      await profile.context.setOffline(true);

      const event = ev('start_travel', `${day}T08:30:00.000Z`);
      // One keystroke per call, none awaited before the next, the sections interleaved so that
      // every section has keystrokes at the end of the burst.
      await page.evaluate(
        async ([id, typed, timerEvent]) => {
          const h = (globalThis as unknown as { harness: Harness }).harness;
          const keys: Promise<unknown>[] = [];
          const sections = Object.keys(typed) as (keyof typeof typed)[];
          const longest = Math.max(...sections.map((s) => typed[s].length));
          for (let i = 0; i < longest; i++) {
            for (const s of sections) if (i < typed[s].length) keys.push(h.type(id, s, typed[s][i]!));
            if (i === 8) keys.push(h.recordTimerEvents(id, [timerEvent]));
          }
          await Promise.all(keys);
        },
        [visitId, TYPED, event] as const,
      );
      assert.deepEqual(await call(page, 'soap', visitId), TYPED, 'the live draft has every keystroke');
      await new Promise((r) => setTimeout(r, PAUSE_MS));

      await page.reload({ timeout: 60_000 });
      await openShell(page, pages.origin);
      await call(page, 'open', server.url, 'idb://burst');
      assert.deepEqual(await call(page, 'soap', visitId), TYPED, 'every keystroke came back from IndexedDB');
      const receipt = await call(page, 'receipt', visitId);
      assert.equal(receipt.pendingMutations, 1, 'the timer event waits in the outbox');
      assert.equal(receipt.draftOnDeviceOnly, true);
    } finally {
      await profile.close();
    }
  });
});
