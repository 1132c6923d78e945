/**
 * `@fieldchart/client` in a real browser: Debian's Chromium driven by playwright-core (no
 * browser download), a page that loads the library's browser build, and PGlite's WASM and
 * data files served beside it as separate assets — the esbuild recipe of client-lib/README.md.
 *
 * The page is an app shell an installed app would have: a service worker keeps its files, so
 * the page reloads while the browser is offline, as a PWA does. Only the shell is cached; the
 * API and the sync socket go to the network (another origin, allowed by the server's CORS).
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { Harness } from '../fixtures/browser-client/page.ts';
import { emptyDeviceImage } from './empty-device-image.ts';
import { pgliteNodeOnly } from './pglite-node-stub.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PGLITE_DIST = path.join(root, 'node_modules/@electric-sql/pglite/dist');
/** The files PGlite fetches by `new URL(<file>, import.meta.url)`: beside the bundle. */
const PGLITE_ASSETS = ['pglite.wasm', 'pglite.data', 'initdb.wasm'] as const;

export const CHROMIUM = '/usr/bin/chromium';

/**
 * Why the browser tests cannot run here, or null. CI must run them: there a missing Chromium
 * is a failure (`.ci/run` installs it), never a skip.
 */
export function browserMissing(): string | null {
  if (fs.existsSync(CHROMIUM)) return null;
  const why = `${CHROMIUM} is missing (apt-get install chromium)`;
  if (process.env.CI) throw new Error(`${why}: CI runs the browser tests`);
  return why;
}

/**
 * Flags for a closed network: without the background-networking ones Chromium's own
 * connections (updates, sync, field trials) are refused and slow everything down.
 */
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 120_000 });
}

/**
 * A persistent context on a new, empty user-data dir: IndexedDB lives in files on disk
 * (`userDataDir`, removed by `close`; a test may read it after `context.close()`).
 */
export async function launchPersistent(): Promise<{ context: BrowserContext; userDataDir: string; close(): Promise<void> }> {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-chromium-'));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 120_000 });
  } catch (err) {
    fs.rmSync(userDataDir, { recursive: true, force: true });
    throw err;
  }
  return {
    context,
    userDataDir,
    async close() {
      await context.close().catch(() => {});
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/**
 * The library as an app bundles it: esbuild for the browser, PGlite's `node:` loads stubbed,
 * nothing external. Two entries: the page, and the database worker several tabs share.
 */
async function bundlePage(): Promise<{ page: string; worker: string }> {
  const out = await build({
    absWorkingDir: root,
    entryPoints: { page: 'test/fixtures/browser-client/page.ts', 'db-worker': 'test/fixtures/browser-client/db-worker.ts' },
    outdir: 'out',
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    bundle: true,
    write: false,
    logLevel: 'silent',
    external: [],
    plugins: [pgliteNodeOnly],
  });
  const text = (name: string) => {
    const file = out.outputFiles.find((f) => path.basename(f.path) === name);
    if (!file) throw new Error(`no ${name} in the bundle (${out.outputFiles.map((f) => f.path).join(', ')})`);
    return file.text;
  };
  if (out.outputFiles.length !== 2) throw new Error(`expected two bundle files, got ${out.outputFiles.length}`);
  return { page: text('page.js'), worker: text('db-worker.js') };
}

/** The empty device image (client-lib `makeEmptyDeviceImage`), served as an app serves it: a shell asset. */
const EMPTY_IMAGE = '/empty-device.tar';

const SHELL = ['/', '/page.js', '/db-worker.js', EMPTY_IMAGE, ...PGLITE_ASSETS.map((a) => `/${a}`)];

const INDEX_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Fieldchart client</title></head>
<body><p id="state">loading</p>
<script type="module">
  // Offline, the worker cannot be checked for an update: the registration stands as it is.
  await navigator.serviceWorker.register('/sw.js').catch(() => undefined);
  await import('/page.js');
  document.getElementById('state').textContent = 'ready';
</script></body></html>`;

/** Keeps the shell on install, answers it from the cache first; everything else goes to the network. */
const SERVICE_WORKER = `const SHELL = ${JSON.stringify(SHELL)};
self.addEventListener('install', (e) => e.waitUntil(caches.open('shell').then((c) => c.addAll(SHELL)).then(() => self.skipWaiting())));
self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));
self.addEventListener('fetch', (e) => {
  const url = new URL(e.request.url);
  if (url.origin !== self.location.origin || !SHELL.includes(url.pathname)) return;
  e.respondWith(caches.match(url.pathname).then((hit) => hit ?? fetch(e.request)));
});`;

export interface PageServer {
  /** The app's origin, e.g. `http://127.0.0.1:41234` (give it to the API server's CORS_ORIGINS). */
  readonly origin: string;
  close(): Promise<void>;
}

/** Serves the shell on a loopback port. */
export async function startPageServer(): Promise<PageServer> {
  const bundle = await bundlePage();
  const files = new Map<string, { type: string; body: Buffer | string }>([
    ['/', { type: 'text/html; charset=utf-8', body: INDEX_HTML }],
    ['/page.js', { type: 'text/javascript; charset=utf-8', body: bundle.page }],
    ['/db-worker.js', { type: 'text/javascript; charset=utf-8', body: bundle.worker }],
    ['/sw.js', { type: 'text/javascript; charset=utf-8', body: SERVICE_WORKER }],
    [EMPTY_IMAGE, { type: 'application/x-tar', body: Buffer.from(await (await emptyDeviceImage()).arrayBuffer()) }],
    ...PGLITE_ASSETS.map((a) => [`/${a}`, { type: a.endsWith('.wasm') ? 'application/wasm' : 'application/octet-stream', body: fs.readFileSync(path.join(PGLITE_DIST, a)) }] as const),
  ]);
  const server = http.createServer((req, res) => {
    const file = files.get(new URL(req.url ?? '/', 'http://x').pathname);
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-store' }).end(file.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Loads the shell and waits until the page's harness is there and the service worker controls the page. */
export async function openShell(page: Page, origin: string): Promise<void> {
  await page.goto(`${origin}/`, { timeout: 60_000 });
  await page.waitForFunction(() => document.getElementById('state')?.textContent === 'ready' && navigator.serviceWorker.controller !== null, undefined, { timeout: 60_000 });
}

type Method = keyof Harness;

/** Calls the page's harness: `call(page, 'recordTimerEvents', visitId, events)`. */
export function call<M extends Method>(page: Page, method: M, ...args: Parameters<Harness[M]>): Promise<Awaited<ReturnType<Harness[M]>>> {
  return page.evaluate(
    ([m, a]) => (globalThis as unknown as { harness: Record<string, (...x: unknown[]) => unknown> }).harness[m]!(...a),
    [method, args] as [string, unknown[]],
  ) as Promise<Awaited<ReturnType<Harness[M]>>>;
}
