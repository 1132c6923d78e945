/**
 * The field app's cold start (issue 13): Chromium, the demo clinician signed in and synced,
 * then the time from navigation start to the first rendered visit list (the app's
 * `fieldchart:visit-list` performance mark), several runs each:
 *
 *   static list        baseline: a static page (one small script, the app's CSS) rendering the
 *                      same number of list items from data inlined in it — no client, no PGlite;
 *                      served from memory by a plain node:http server on loopback
 *   app online         the app reloaded with the network up (shell from the service worker),
 *                      at once after the last start's list: its sync's writes have just
 *                      deleted the kept first screen, so this is the database's list
 *   app online, reopened after its sync settled
 *                      the same, once the client kept its first screen again (it does so
 *                      when its writes have been quiet for 0.4 s): an app reopened a while
 *                      after its last sync
 *   app offline        the app reloaded offline: shell from the service worker, data from
 *                      IndexedDB (PGlite's WASM compiled and the device database opened)
 *   app relaunch       the browser closed and started again on the same profile, offline,
 *                      then the app opened: nothing warm in the renderer
 *
 * The first rendered list comes from the first screen the client keeps beside the device
 * database (sealed with the device key, deleted before every write: client-lib
 * storage/first-screen.ts) when one is kept; each app row has a second row, "list from the
 * database", timed to the app's `fieldchart:visit-list-db` mark: the list read from the opened
 * PGlite database itself.
 *
 * Also the app's bundle size, raw and gzipped, without PGlite's WASM and data (listed apart).
 * The server runs in this process (PGlite, or PostgreSQL with BENCH_DATABASE_URL); the page
 * does the work being measured. Output: a table, the median time of each start's marks (the
 * client's: database opened, unlocked, migrated, sync started; the app's lists), then one JSON
 * line (last on stdout).
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { buildFieldApp, PGLITE_ASSETS } from '../scripts/build-app.ts';
import { browserMissing, CHROMIUM, CHROMIUM_ARGS } from '../test/helpers/browser-page.ts';
import { signedInDemo, startServerPair } from './support/server-pair.ts';
import { fmt, machine, median, quick, ratio, table } from './support/sync-peer.ts';

const RUNS = quick ? 3 : 7;
const MARK = 'fieldchart:visit-list';
const DB_MARK = 'fieldchart:visit-list-db';

const missing = browserMissing();
if (missing) {
  console.error(`app-cold-start: ${missing}`);
  process.exit(1);
}

const loadBefore = os.loadavg()[0] ?? 0;
const appDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-bench-app-'));
const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-bench-chromium-'));
const built = await buildFieldApp(appDir);
const pair = await startServerPair({ env: { FIELD_APP_DIR: appDir } });
let context: BrowserContext | null = null;
let baseline: http.Server | null = null;

// The browser's clock reads the demo clinician's time zone: the app lists the phone's today, and
// the demo's today is the clinician's (they differ for hours of every UTC day).
let timezoneId: string | undefined;
const launch = () => chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 120_000, timezoneId });

/** Milliseconds from navigation start to the app's mark, after loading `url`; `db`: also to the database's list. */
async function timeToList(page: Page, url: string): Promise<number>;
async function timeToList(page: Page, url: string, db: true): Promise<[number, number]>;
async function timeToList(page: Page, url: string, db = false): Promise<number | [number, number]> {
  await page.goto(url, { timeout: 60_000 });
  const marks = db ? [MARK, DB_MARK] : [MARK];
  await page.waitForFunction((ms) => ms.every((m) => performance.getEntriesByName(m).length > 0), marks, { timeout: 60_000 });
  const at = await page.evaluate((ms) => ms.map((m) => performance.getEntriesByName(m)[0]!.startTime), marks);
  lastMarks = await page.evaluate(() =>
    performance
      .getEntriesByType('mark')
      .filter((m) => m.name.startsWith('fieldchart:'))
      .map((m) => ({ name: m.name, at: m.startTime })),
  );
  return db ? [at[0]!, at[1]!] : at[0]!;
}
/** Every `fieldchart:` mark of the last start: where the start spent its time. */
let lastMarks: Array<{ name: string; at: number }> = [];

/**
 * Resolves once the client has kept its first screen (it does so after its writes settle): the
 * state of an app closed a while after its last sync, as a clinician reopens it.
 */
async function firstScreenKept(page: Page): Promise<void> {
  const kept = () =>
    page.evaluate(
      () =>
        new Promise<boolean>((resolve) => {
          const req = indexedDB.open('fieldchart-first-screen');
          req.onerror = () => resolve(false);
          req.onsuccess = () => {
            const db = req.result;
            if (!db.objectStoreNames.contains('keys')) {
              db.close();
              resolve(false);
              return;
            }
            const get = db.transaction('keys', 'readonly').objectStore('keys').get('idb://fieldchart-app');
            get.onsuccess = () => {
              db.close();
              resolve(get.result !== undefined);
            };
            get.onerror = () => {
              db.close();
              resolve(false);
            };
          };
        }),
    );
  const deadline = performance.now() + 60_000;
  while (!(await kept())) {
    if (performance.now() > deadline) throw new Error('the client kept no first screen within 60 s');
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function listed(page: Page): Promise<number> {
  return page.locator('#today .visit').count();
}

try {
  const demo = await signedInDemo(pair);
  timezoneId = demo.time_zone;
  const appUrl = `${pair.server.url}/app/`;
  process.stderr.write(`app-cold-start: ${pair.backend}, demo clinician with ${demo.visits.today} visits today, ${RUNS} runs each, load ${fmt(os.loadavg()[0] ?? 0, 2)}\n`);

  context = await launch();
  let page = await context.newPage();
  await page.goto(appUrl, { timeout: 60_000 });
  // The first start runs initdb: tens of seconds on a loaded machine.
  await page.getByLabel('Email').fill(demo.email, { timeout: 180_000 });
  await page.getByLabel('Password').fill(demo.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForFunction((n) => document.querySelectorAll('#today .visit').length === n, demo.visits.today, { timeout: 120_000 });
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null, undefined, { timeout: 60_000 });
  const today = demo.visits.today;

  // The baseline: the same list markup and CSS, its data inlined, rendered by one small script.
  const items = await page.locator('#today .visit').evaluateAll((els) => els.map((e) => e.outerHTML));
  const css = /href="(app-[0-9a-f]+\.css)"/.exec(fs.readFileSync(path.join(appDir, 'index.html'), 'utf8'))?.[1];
  const baselineJs = `const items = ${JSON.stringify(items)};\nconst ul = document.createElement('ul');\nul.id = 'today';\nul.className = 'visits';\nul.innerHTML = items.join('');\ndocument.getElementById('main').append(ul);\nperformance.mark(${JSON.stringify(MARK)});\n`;
  const baselineHtml = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>baseline</title><link rel="stylesheet" href="${css}"><script type="module" src="baseline.js"></script></head><body><main id="main"></main></body></html>`;
  const files = new Map<string, [string, string | Buffer]>([
    ['/', ['text/html; charset=utf-8', baselineHtml]],
    ['/baseline.js', ['text/javascript; charset=utf-8', baselineJs]],
    [`/${css}`, ['text/css; charset=utf-8', fs.readFileSync(path.join(appDir, css ?? 'missing.css'))]],
  ]);
  baseline = http.createServer((req, res) => {
    const file = files.get(req.url ?? '/');
    if (!file) res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': file[0] }).end(file[1]);
  });
  await new Promise<void>((resolve) => baseline!.listen(0, '127.0.0.1', resolve));
  const baselineUrl = `http://127.0.0.1:${(baseline.address() as AddressInfo).port}/`;

  const results: Array<{ what: string; runs: number[] }> = [];
  const stages = new Map<string, Map<string, number[]>>();
  const measure = async (what: string, once: () => Promise<number | [number, number]>) => {
    const runs: number[] = [];
    const dbRuns: number[] = [];
    // One warm-up, not counted (the first visit to a URL fills caches the next runs share).
    await once();
    for (let i = 0; i < RUNS; i++) {
      const r = await once();
      runs.push(typeof r === 'number' ? r : r[0]);
      if (typeof r !== 'number') dbRuns.push(r[1]);
      const byMark = stages.get(what) ?? new Map<string, number[]>();
      for (const m of lastMarks) byMark.set(m.name, [...(byMark.get(m.name) ?? []), m.at]);
      stages.set(what, byMark);
    }
    results.push({ what, runs });
    if (dbRuns.length > 0) results.push({ what: `${what}, list from the database`, runs: dbRuns });
  };

  await measure('static list', () => timeToList(page, baselineUrl));
  await measure('app online', async () => {
    const ms = await timeToList(page, appUrl, true);
    if ((await listed(page)) !== today) throw new Error('the app listed another number of visits');
    return ms;
  });
  await measure('app online, reopened after its sync settled', async () => {
    await firstScreenKept(page);
    const ms = await timeToList(page, appUrl, true);
    if ((await listed(page)) !== today) throw new Error('the app listed another number of visits');
    return ms;
  });
  await context.setOffline(true);
  await measure('app offline', async () => {
    const ms = await timeToList(page, appUrl, true);
    if ((await listed(page)) !== today) throw new Error('offline, the app listed another number of visits');
    return ms;
  });
  await measure('app relaunch', async () => {
    await context!.close();
    context = await launch();
    await context.setOffline(true);
    page = await context.newPage();
    const ms = await timeToList(page, appUrl, true);
    if ((await listed(page)) !== today) throw new Error('after a relaunch, the app listed another number of visits');
    return ms;
  });

  const base = median(results[0]!.runs);
  console.log(
    table(
      ['start', 'visits listed', 'ms (median)', 'ms (min)', 'ms (max)', 'vs static list'],
      results.map((r) => [r.what, String(today), fmt(median(r.runs)), fmt(Math.min(...r.runs)), fmt(Math.max(...r.runs)), ratio(median(r.runs), base)]),
    ),
  );
  // Where each start went: the median time of each mark, in the order they came.
  for (const [what, byMark] of stages) {
    if (byMark.size === 0) continue;
    const ordered = [...byMark].map(([name, ats]) => [name, median(ats)] as const).sort((a, b) => a[1] - b[1]);
    console.log(`${what}: ${ordered.map(([name, at]) => `${name.replace('fieldchart:', '')} ${fmt(at)}`).join(', ')} ms`);
  }
  const assetBytes = Object.fromEntries(PGLITE_ASSETS.map((a) => [a, fs.statSync(path.join(appDir, a)).size]));
  console.log(
    table(
      ['app code (JS + CSS, no WASM)', 'bytes', 'gzip bytes'],
      [['app bundle', String(built.codeBytes), String(built.codeGzipBytes)], ...PGLITE_ASSETS.map((a) => [`${a} (apart)`, String(assetBytes[a]), String(fs.statSync(path.join(appDir, `${a}.gz`)).size)])],
    ),
  );
  console.log(
    JSON.stringify({
      bench: 'app-cold-start',
      backend: pair.backend,
      quick,
      runs: RUNS,
      visitsListed: today,
      ...machine(loadBefore),
      results: results.map((r) => ({ start: r.what, medianMs: Number(median(r.runs).toFixed(1)), minMs: Number(Math.min(...r.runs).toFixed(1)), maxMs: Number(Math.max(...r.runs).toFixed(1)), ratioToStatic: Number((median(r.runs) / base).toFixed(2)) })),
      bundle: { bytes: built.codeBytes, gzipBytes: built.codeGzipBytes, pgliteAssetBytes: assetBytes },
    }),
  );
} finally {
  await context?.close().catch(() => {});
  baseline?.closeAllConnections();
  baseline?.close();
  await pair.stop();
  fs.rmSync(appDir, { recursive: true, force: true });
  fs.rmSync(userDataDir, { recursive: true, force: true });
}
