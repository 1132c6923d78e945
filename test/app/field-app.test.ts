/**
 * The field app at /app (app/, built by scripts/build-app.ts, served by the server) in Debian's
 * Chromium: a clinician signs in, sees today's and upcoming visits, goes offline, records the
 * timer (with the browser's GPS fix) and the mileage and types the SOAP draft, reloads the page
 * while offline (the shell from the service worker, the data from IndexedDB: all still there),
 * comes back online, and the server — asked over REST with the clinician's token — has every
 * change exactly once; the note submitted from the app carries the typed text once.
 *
 * APP_SCREENSHOTS=1 also writes docs/app-sign-in.png, docs/app-visits.png and
 * docs/app-visit-offline.png (the README shows them).
 *
 * Skipped where Chromium is missing, except in CI (see test/helpers/browser-page.ts).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { buildFieldApp } from '../../scripts/build-app.ts';
import { onEmbeddedBackend } from '../helpers/backends.ts';
import { browserMissing, launchPersistent } from '../helpers/browser-page.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { createPatient, details, scheduleVisit, utcClinician } from '../server/visits/visit-fixtures.ts';

const missing = browserMissing();
if (missing) console.log(`# browser tests skipped: ${missing}`);
const TEST = { skip: missing ?? false, timeout: 300_000 };
const DOCS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../docs');
const SCREENSHOTS = process.env.APP_SCREENSHOTS === '1';

/** A fixed, plausible GPS position the browser reports (Chicago). */
const GPS = { latitude: 41.9254, longitude: -87.6528, accuracy: 12 };

let appDir: string;
before(async () => {
  if (missing) return;
  appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-app-'));
  await buildFieldApp(appDir);
});
after(() => {
  if (appDir) fs.rmSync(appDir, { recursive: true, force: true });
});

const isoDate = (d: Date) => d.toISOString().slice(0, 10);

async function screenshot(page: Page, name: string): Promise<void> {
  if (SCREENSHOTS) await page.screenshot({ path: path.join(DOCS, `app-${name}.png`) });
}

/** The receipt a visit's list item shows ('device', 'server'), or null without one. */
async function listReceipt(page: Page, visitId: string): Promise<string | null> {
  return page.locator(`[data-visit="${visitId}"] [data-receipt]`).getAttribute('data-receipt', { timeout: 1_000 }).catch(() => null);
}

onEmbeddedBackend('the field app at /app in Chromium', (backend) => {
  let server: TestServer;
  before(async () => {
    if (missing) return;
    server = await startTestServer(backend, { env: { FIELD_APP_DIR: appDir } });
  });
  after(async () => {
    await server?.close();
  });

  test('sign in, work offline across a reload, and every change reaches the server once', TEST, async () => {
    const today = isoDate(new Date());
    const tomorrow = isoDate(new Date(Date.now() + 86_400_000));
    const user = await utcClinician(server);
    const patient = await createPatient(server, user, { referral: { discipline: 'PT' } });
    const visitId = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today, start_time: '09:00' });
    const laterId = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: tomorrow, start_time: '10:30' });

    const profile = await launchPersistent();
    const context: BrowserContext = profile.context;
    try {
      await context.grantPermissions(['geolocation'], { origin: server.url });
      await context.setGeolocation(GPS);
      const page = await context.newPage();
      // A phone's screen: the app is made for one.
      await page.setViewportSize({ width: 412, height: 860 });
      const pageErrors: string[] = [];
      page.on('pageerror', (e) => pageErrors.push(e.message));
      page.setDefaultTimeout(60_000);
      await page.goto(`${server.url}/app`);
      assert.equal(new URL(page.url()).pathname, '/app/', '/app redirects to /app/');
      await page.locator('main[data-rendered="sign-in"]').waitFor();
      await screenshot(page, 'sign-in');

      await page.getByLabel('Email').fill(user.email);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator(`#today [data-visit="${visitId}"]`).waitFor();
      await page.locator(`#upcoming [data-visit="${laterId}"]`).waitFor();
      assert.equal(await listReceipt(page, visitId), null, 'nothing written on this phone yet');
      const fromImage = () => page.evaluate(() => performance.getEntriesByName('fieldchart:db-from-image').length > 0);
      assert.equal(await fromImage(), true, 'the first open started from the app’s empty-device.tar, not initdb');
      // The shell is in the service worker's cache before the network goes.
      await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
      await screenshot(page, 'visits');

      await context.setOffline(true);
      await page.locator('#offline-banner').waitFor({ state: 'visible' });
      await page.locator(`[data-visit="${visitId}"] a`).click();
      await page.locator('main[data-rendered="visit"]').waitFor();

      // The draft first, key by key in one section and at once in another, then the timer and
      // the mileage; all of it must come back after the offline reload.
      await page.getByLabel('Subjective').pressSequentially('Reports less knee pain.');
      await page.getByLabel('Plan').fill('Continue HEP twice daily.');
      await page.getByRole('button', { name: 'Start travel' }).click();
      await page.locator('#timer-events li[data-event="start_travel"]').waitFor();
      await page.getByRole('button', { name: 'Arrive' }).click();
      await page.locator('#timer-events li[data-event="arrive"]').waitFor();
      await page.getByLabel('Total miles').fill('18.4');
      await page.getByLabel('Travel miles').fill('17');
      await page.getByRole('button', { name: 'Save mileage' }).click();
      await page.locator('#mileage-message', { hasText: 'Mileage saved.' }).waitFor();
      await page.locator('#receipt[data-receipt="device"]').waitFor();
      // The checklist gaps come from the device: the PT checklist against the draft.
      await page.locator('#checklist li[data-item]').first().waitFor();
      await screenshot(page, 'visit-offline');
      assert.deepEqual((await details(server, user, visitId)).timer_events, [], 'the page really was offline');

      // Reloaded while offline: the shell from the service worker, the data from IndexedDB.
      await page.reload();
      await page.locator('main[data-rendered="visit"]').waitFor();
      assert.equal(await fromImage(), false, 'the database IndexedDB holds is opened, not replaced');
      await page.locator('#offline-banner').waitFor({ state: 'visible' });
      assert.deepEqual(await page.locator('#timer-events li').evaluateAll((els) => els.map((e) => e.getAttribute('data-event'))), ['start_travel', 'arrive']);
      assert.equal(await page.getByLabel('Total miles').inputValue(), '18.4');
      assert.equal(await page.getByLabel('Subjective').inputValue(), 'Reports less knee pain.');
      assert.equal(await page.getByLabel('Plan').inputValue(), 'Continue HEP twice daily.');
      await page.locator('#receipt[data-receipt="device"]').waitFor();
      await page.locator('#back').click();
      await page.locator('main[data-rendered="visit-list"]').waitFor();
      assert.equal(await listReceipt(page, visitId), 'device', '"On this phone" in the list');

      // Reloaded on the list, still offline: the first screen the client kept (sealed, deleted
      // before each write, read again after) shows the list before the database has opened, and
      // the database's own list then shows the same receipt.
      await eventually(
        async () => {
          await page.reload();
          await page.waitForFunction(() => performance.getEntriesByName('fieldchart:visit-list-db').length > 0, undefined, { timeout: 60_000 });
          const [first, db] = await page.evaluate(() => ['fieldchart:visit-list', 'fieldchart:visit-list-db'].map((m) => performance.getEntriesByName(m)[0]!.startTime));
          assert.ok(first! < db!, `the list first from the kept screen (${first} ms), then from the database (${db} ms)`);
        },
        { timeoutMs: 120_000, intervalMs: 500 },
      );
      assert.equal(await listReceipt(page, visitId), 'device', '"On this phone" in the list after the reload');

      await context.setOffline(false);
      await page.locator('#offline-banner').waitFor({ state: 'hidden' });
      await eventually(async () => assert.equal(await listReceipt(page, visitId), 'server', '"On the server" once acknowledged'), { timeoutMs: 60_000, intervalMs: 200 });

      const online = await details(server, user, visitId);
      assert.deepEqual(online.timer_events.map((e: { event_type: string }) => e.event_type), ['start_travel', 'arrive'], 'each timer event once');
      assert.equal(online.timer_events[1].latitude, GPS.latitude, "the browser's GPS fix");
      assert.equal(online.timer_events[1].accuracy, GPS.accuracy);
      assert.equal(online.mileage.total_miles, 18.4);
      assert.equal(online.mileage.travel_miles, 17);
      assert.equal(online.status, 'in_progress');

      // The note, submitted from the app: the server takes the sections from its copy of the draft.
      await page.locator(`[data-visit="${visitId}"] a`).click();
      await page.locator('main[data-rendered="visit"]').waitFor();
      await page.getByLabel('Objective').fill('ROM 0-115 degrees.');
      await page.getByLabel('Assessment').fill('Progressing toward goals.');
      await page.getByRole('button', { name: 'Submit note' }).click();
      const done = await eventually(async () => {
        const d = await details(server, user, visitId);
        assert.equal(d.status, 'completed');
        return d;
      }, { timeoutMs: 60_000, intervalMs: 250 });
      assert.equal(done.soap_note.subjective, 'Reports less knee pain.', 'typed once, arrived once');
      assert.equal(done.soap_note.plan, 'Continue HEP twice daily.');
      assert.equal(done.soap_note.objective, 'ROM 0-115 degrees.');
      assert.equal(done.timer_events.length, 2);
      assert.equal((await details(server, user, laterId)).timer_events.length, 0, 'the other visit untouched');
      assert.deepEqual(pageErrors, [], 'no uncaught error in the app');
    } finally {
      await profile.close();
    }
  });

  // A tap on a visit while the list re-reads once lost to the list: the list's read returns
  // only once its sealed copy is stored (the first screen), which waits behind the device's
  // other storage work; meanwhile the visit was drawn, and then the list over it (CI
  // 2026-12-02, under load, right after sign-in). Here the first screen's sealing is held for
  // three seconds (its WebCrypto call, picked out by its additional data) while a server change
  // makes the list re-read and the visit is tapped: the visit must stay.
  test('a visit tapped while the list re-reads stays on screen', TEST, async () => {
    const today = isoDate(new Date());
    const user = await utcClinician(server);
    const patient = await createPatient(server, user, { referral: { discipline: 'PT' } });
    const tapped = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today, start_time: '09:00' });
    const other = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today, start_time: '11:00' });
    const profile = await launchPersistent();
    try {
      await profile.context.addInitScript(() => {
        const encrypt = SubtleCrypto.prototype.encrypt;
        const w = window as unknown as { __holdFirstScreenMs?: number; __firstScreenHeld?: number };
        SubtleCrypto.prototype.encrypt = async function (this: SubtleCrypto, algorithm, key, data) {
          const ad = (algorithm as { additionalData?: BufferSource }).additionalData;
          const bytes = ad instanceof ArrayBuffer ? new Uint8Array(ad) : ad ? new Uint8Array(ad.buffer, ad.byteOffset, ad.byteLength) : null;
          if (w.__holdFirstScreenMs && bytes && new TextDecoder().decode(bytes).includes('first_screen')) {
            w.__firstScreenHeld = (w.__firstScreenHeld ?? 0) + 1;
            await new Promise((r) => setTimeout(r, w.__holdFirstScreenMs));
          }
          return encrypt.call(this, algorithm, key, data);
        } as SubtleCrypto['encrypt'];
      });
      const page = await profile.context.newPage();
      const pageErrors: string[] = [];
      page.on('pageerror', (e) => pageErrors.push(e.message));
      page.setDefaultTimeout(60_000);
      await page.goto(`${server.url}/app/`);
      await page.getByLabel('Email').fill(user.email);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator(`#today [data-visit="${other}"]`).waitFor();
      await page.evaluate(() => ((window as unknown as { __holdFirstScreenMs: number }).__holdFirstScreenMs = 3_000));
      // A change from the server: the list re-reads, and its read waits on the held sealing.
      const res = await server.api('PUT', `/visit/${other}/mileage`, { token: user.token, body: { total_miles: 12.5 } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      await page.waitForFunction(() => ((window as unknown as { __firstScreenHeld?: number }).__firstScreenHeld ?? 0) > 0);
      await page.locator(`[data-visit="${tapped}"] a`).click();
      await page.locator('main[data-rendered="visit"] #visit-title').waitFor();
      // Past the held sealing: the list's read has returned by then.
      for (let waited = 0; waited < 4_000; waited += 250) {
        await new Promise((r) => setTimeout(r, 250));
        assert.equal(await page.locator('main').getAttribute('data-rendered'), 'visit', `the visit stays (${waited + 250} ms after it was drawn)`);
      }
      assert.ok(await page.locator('#visit-title').isVisible());
      assert.deepEqual(pageErrors, [], 'no uncaught error in the app');
    } finally {
      await profile.close();
    }
  });
});
