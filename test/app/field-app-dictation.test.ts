/**
 * The field app's dictation in Chromium: the microphone is Chromium's fake capture device
 * playing a WAV of spoken words (espeak-ng). The app records it with MediaRecorder as m4a
 * (Chromium writes `audio/mp4` with Opus) while the phone is offline and hands it to the client library, which keeps it encrypted in IndexedDB; the page is
 * reloaded offline and the recording is still "on this phone"; back online it is uploaded
 * (tus), POST /ai/process-audio runs, and the app shows the generated note section by section;
 * accepting a section adds it to the draft, which reaches the server's copy. The speech-to-text
 * service is the local stand-in of its OpenAI-compatible protocol, scripted with the words.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import { buildFieldApp } from '../../scripts/build-app.ts';
import { onEmbeddedBackend } from '../helpers/backends.ts';
import { browserMissing, CHROMIUM, CHROMIUM_ARGS } from '../helpers/browser-page.ts';
import { eventually } from '../helpers/eventually.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';
import { spokenWav } from '../server/ai/pipeline/pipeline-fixtures.ts';
import { startSttStandIn, verboseJson, type SttStandIn } from '../server/ai/pipeline/stt-stand-in.ts';
import { createPatient, scheduleVisit, utcClinician } from '../server/visits/visit-fixtures.ts';

const missing = browserMissing();
if (missing) console.log(`# browser tests skipped: ${missing}`);
const TEST = { skip: missing ?? false, timeout: 300_000 };
const WORDS = 'Patient reports knee pain three out of ten. Plan: continue home exercises twice daily.';

let appDir: string;
let wavFile: string;
let browser: Browser;
before(async () => {
  if (missing) return;
  appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-app-'));
  await buildFieldApp(appDir);
  wavFile = path.join(appDir, 'dictation.wav');
  fs.writeFileSync(wavFile, spokenWav(WORDS, 'field-app-dictation'));
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: 120_000,
    args: [...CHROMIUM_ARGS, '--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream', `--use-file-for-fake-audio-capture=${wavFile}`],
  });
});
after(async () => {
  await browser?.close();
  if (appDir) fs.rmSync(appDir, { recursive: true, force: true });
});

onEmbeddedBackend('the field app: dictation and the AI suggestion', (backend) => {
  let server: TestServer;
  let stt: SttStandIn;
  /** The phone of the first test, signed in, for the next. */
  let signedIn: { context: BrowserContext; user: Awaited<ReturnType<typeof utcClinician>>; patientUuid: string } | null = null;
  before(async () => {
    if (missing) return;
    stt = await startSttStandIn();
    stt.script({ status: 200, json: verboseJson([{ start: 0, end: 3, text: 'Patient reports knee pain three out of ten.' }, { start: 3, end: 6, text: 'Plan: continue home exercises twice daily.' }]) });
    server = await startTestServer(backend, { env: { FIELD_APP_DIR: appDir, STT_URL: stt.url, STT_API_KEY: 'sk-local' } });
  });
  after(async () => {
    await signedIn?.context.close();
    await server?.close();
    await stt?.close();
  });

  test('record offline, reload offline, upload once online, see the suggestion by section, add one to the draft', TEST, async () => {
    const day = new Date().toISOString().slice(0, 10);
    const user = await utcClinician(server);
    const patient = await createPatient(server, user, { referral: { discipline: 'PT' } });
    const visitId = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: day, start_time: '09:00' });
    const context = await browser.newContext({ viewport: { width: 412, height: 860 } });
    let kept = false;
    try {
      await context.grantPermissions(['microphone'], { origin: server.url });
      const page = await context.newPage();
      page.setDefaultTimeout(90_000);
      const pageErrors: string[] = [];
      page.on('pageerror', (e) => pageErrors.push(e.message));
      await page.goto(`${server.url}/app/`);
      await page.getByLabel('Email').fill(user.email);
      await page.getByLabel('Password').fill(user.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator(`[data-visit="${visitId}"] a`).click();
      await page.locator('main[data-rendered="visit"]').waitFor();
      // The shell is in the service worker's cache before the network goes.
      await page.waitForFunction(() => navigator.serviceWorker.controller !== null);
      await context.setOffline(true);
      await page.locator('#offline-banner').waitFor({ state: 'visible' });

      await page.getByRole('button', { name: 'Record dictation' }).click();
      // Two seconds of the fake microphone, as the app counts them: the stand-in decides the
      // words, but the server still checks the file is audio with a duration (ffprobe) and
      // normalises it (ffmpeg).
      await page.locator('#dictation-message', { hasText: /Recording… [2-9] s/ }).waitFor();
      await page.getByRole('button', { name: 'Stop recording' }).click();
      await page.locator('#dictation-state li[data-state="on_device"]', { hasText: 'On this phone' }).waitFor();
      await page.locator('#dictation-message', { hasText: /Recorded \d+ s \(m4a, \d+ KB\)/ }).waitFor();

      // Reloaded while offline: the recording is still on this phone (IndexedDB, encrypted).
      await page.reload();
      await page.locator('main[data-rendered="visit"]').waitFor();
      await page.locator('#offline-banner').waitFor({ state: 'visible' });
      await page.locator('#dictation-state li[data-state="on_device"]', { hasText: 'On this phone' }).waitFor();
      assert.equal(await page.locator('#dictation-state li').count(), 1);
      assert.equal(stt.requests.length, 0, 'nothing reached the server while offline');

      await context.setOffline(false);
      await page.locator('#offline-banner').waitFor({ state: 'hidden' });
      await page.locator('#dictation-state li[data-state="on_server"]', { hasText: 'On the server' }).waitFor();
      await page.locator('.suggestion[data-section="subjective"]').waitFor();
      assert.equal(stt.requests.length, 1, 'one upload reached speech-to-text');
      const db = server.runtime.services.unitOfWork.db;
      const runs = await db.execute(sql`select id from ai_transcriptions where visit_id = ${visitId}`);
      assert.equal((Array.isArray(runs) ? runs : (runs as { rows: unknown[] }).rows).length, 1, 'one run on the server');
      assert.ok((stt.requests[0]?.file?.bytes ?? 0) > 1000, 'a real recording was sent');
      // The server decided the type from the bytes (an ISO-BMFF ftyp box) and decoded it.
      assert.deepEqual(await audioFormats(visitId), ['m4a']);

      await page.locator('[data-accept="subjective"]').click();
      await eventually(async () => assert.match(await page.getByLabel('Subjective').inputValue(), /knee pain/i), { timeoutMs: 10_000, intervalMs: 100 });
      assert.equal(await page.getByLabel('Plan').inputValue(), '', 'a section is added only when accepted');
      assert.ok(await page.locator('[data-accept="subjective"]').isDisabled());
      // The accepted text is the draft's: it reaches the server's copy, which a submission takes.
      await page.getByLabel('Objective').fill('Gait steady.');
      await page.getByLabel('Assessment').fill('Improving.');
      await page.getByLabel('Plan').fill('Continue.');
      await page.getByRole('button', { name: 'Submit note' }).click();
      const note = await eventually(async () => {
        const res = await server.api('GET', `/visit-details/${visitId}`, { token: user.token });
        assert.equal(res.body.data.status, 'completed');
        return res.body.data.soap_note;
      }, { timeoutMs: 60_000, intervalMs: 250 });
      assert.match(note.subjective, /knee pain/i);
      assert.deepEqual(pageErrors, []);
      // The next test goes on on this phone: its database is made (initdb in the page takes
      // most of a first start) and the clinician is signed in.
      signedIn = { context, user, patientUuid: patient.uuid };
      kept = true;
    } finally {
      if (!kept) await context.close();
    }
  });

  test('a browser whose MediaRecorder writes no MP4 records WAV through Web Audio', TEST, async (t) => {
    if (!signedIn) return t.skip('needs the phone of the test before');
    const { context, user, patientUuid } = signedIn;
    const day = new Date().toISOString().slice(0, 10);
    const visitId = await scheduleVisit(server, user, { patient_uuid: patientUuid, visit_date: day, start_time: '10:00' });
    // As in Firefox: MediaRecorder takes WebM and Ogg only (for the pages opened from now on).
    await context.addInitScript(() => {
      const native = MediaRecorder.isTypeSupported.bind(MediaRecorder);
      MediaRecorder.isTypeSupported = (type: string) => !type.startsWith('audio/mp4') && native(type);
    });
    // One page at a time: the app opens its database in the page (no database worker).
    for (const open of context.pages()) await open.close();
    const page = await context.newPage();
    page.setDefaultTimeout(90_000);
    await page.goto(`${server.url}/app/`);
    await page.locator(`[data-visit="${visitId}"] a`).click();
    await page.locator('main[data-rendered="visit"]').waitFor();
    await page.getByRole('button', { name: 'Record dictation' }).click();
    await page.locator('#dictation-message', { hasText: /Recording… [2-9] s/ }).waitFor();
    await page.getByRole('button', { name: 'Stop recording' }).click();
    await page.locator('#dictation-message', { hasText: /Recorded \d+ s \(wav, \d+ KB\)/ }).waitFor();
    await page.locator('#dictation-state li[data-state="on_server"]', { hasText: 'On the server' }).waitFor();
    assert.deepEqual(await audioFormats(visitId), ['wav']);
  });

  async function audioFormats(visitId: string): Promise<string[]> {
    const result = await server.runtime.services.unitOfWork.db.execute(sql`select format from audio_files where visit_id = ${visitId}`);
    return (Array.isArray(result) ? result : (result as { rows: Array<{ format: string }> }).rows).map((r) => (r as { format: string }).format);
  }
});
