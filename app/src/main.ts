/**
 * The field app: a PWA on `@fieldchart/client`. Everything it shows is read from the device
 * database (IndexedDB), so it opens and works offline; the service worker keeps the app's own
 * files. Screens: sign-in, the visit list (`#/`) and a visit (`#/visit/<uuid>`).
 */
import { createFieldchartClient, localDate, readFirstScreen, startMark, type FieldchartClient } from '@fieldchart/client';
import { debounce, h, messageOf, replace } from './dom.ts';
import { signInView } from './views/sign-in.ts';
import { mountStatus } from './views/status-line.ts';
import { renderVisitList, showVisitList, type VisitListData } from './views/visit-list.ts';
import { openVisitScreen, type VisitScreen } from './views/visit-screen.ts';

/** The device database's name: one per origin, like the app itself. */
const DATA_DIR = 'idb://fieldchart-app';

function el(id: string): HTMLElement {
  const found = document.getElementById(id);
  if (!found) throw new Error(`#${id} missing from index.html`);
  return found;
}

async function registerServiceWorker(): Promise<void> {
  if (!('serviceWorker' in navigator)) return;
  // Offline the worker cannot be checked for an update; the installed one keeps serving.
  await navigator.serviceWorker.register('./sw.js', { scope: './' }).catch(() => undefined);
}

/** Set once the client is open: from then on the device database decides what `main` shows. */
let started = false;

function start(client: FieldchartClient): void {
  started = true;
  const main = el('main');
  const signOut = el('sign-out') as HTMLButtonElement;
  let screen: VisitScreen | null = null;
  let showing: 'sign-in' | 'list' | 'visit' = 'list';
  // Screens are read from the database before they are drawn, and a read may outlast the
  // screen it was for: a list refresh that finishes after a tap on a visit must not draw the
  // list over the visit (seen in the browser tests under load). Each route is a generation;
  // a view draws only while its generation is the latest.
  let generation = 0;

  async function route(): Promise<void> {
    const mine = ++generation;
    const current = () => mine === generation;
    screen?.close();
    screen = null;
    if (!client.sync.status.signedIn) {
      showing = 'sign-in';
      signOut.hidden = true;
      replace(main, signInView(client, () => void route()));
      main.setAttribute('data-rendered', 'sign-in');
      return;
    }
    signOut.hidden = false;
    const visit = /^#\/visit\/([0-9a-f-]{36})$/.exec(location.hash)?.[1];
    if (visit) {
      showing = 'visit';
      const opened = await openVisitScreen(client, main, visit, current);
      // A later route began meanwhile: it did not know of this screen, so it is closed here.
      if (current()) screen = opened;
      else opened.close();
    } else {
      showing = 'list';
      await renderVisitList(client, main, current);
    }
  }
  const show = () => route().catch((err: unknown) => replace(main, h('p', { class: 'error', role: 'alert' }, messageOf(err))));

  // The list re-reads when sync brings or confirms something; a visit screen updates itself.
  const refreshList = debounce(() => {
    const mine = generation;
    if (showing === 'list') void renderVisitList(client, main, () => mine === generation).catch(() => undefined);
  }, 150);
  client.sync.on('change', refreshList);
  client.sync.on('status', (s) => {
    if (!s.signedIn && showing !== 'sign-in') show();
  });
  window.addEventListener('hashchange', show);
  signOut.addEventListener('click', () => {
    client.signOut().then(show, () => {
      if (window.confirm('Some changes are only on this phone. Sign out and discard them?')) void client.signOut({ force: true }).then(show);
    });
  });
  mountStatus(client, el('sync-status'), el('offline-banner'));
  show();
}

/**
 * The list the client kept at its last quiet moment (sealed with the device key, deleted before
 * every write), shown while the device database opens, which takes seconds on a slow phone. Only
 * for today's list: a visit's screen, or a list kept on another day, waits for the database.
 */
async function showFirstScreen(): Promise<void> {
  const data = await readFirstScreen<VisitListData>(DATA_DIR).catch(() => null);
  if (!data || started || data.date !== localDate(new Date()) || /^#\/visit\//.test(location.hash)) return;
  showVisitList(el('main'), data, null);
}

/**
 * The empty database a phone's first open starts from instead of running initdb (the build's
 * `empty-device.tar`, 2.5 MB gzipped): fetched only then. Offline, missing or too slow (the
 * client aborts it), initdb runs.
 */
async function emptyDeviceImage(signal: AbortSignal): Promise<Blob> {
  const res = await fetch('./empty-device.tar', { signal });
  if (!res.ok) throw new Error(`empty-device.tar: ${res.status}`);
  return res.blob();
}

async function boot(): Promise<void> {
  // When the bundle has been fetched, parsed and evaluated: the part of a start before any work.
  startMark('fieldchart:app-script');
  void registerServiceWorker();
  // First, and alone: a few IndexedDB reads that opening the database (PGlite's WASM, its files
  // loaded from IndexedDB) would otherwise queue behind.
  await showFirstScreen();
  try {
    const client = await createFieldchartClient({ baseUrl: location.origin, dataDir: DATA_DIR, pglite: { loadDataDir: emptyDeviceImage } });
    start(client);
  } catch (err) {
    replace(el('main'), h('p', { class: 'error', role: 'alert' }, `This phone's storage could not be opened: ${messageOf(err)}`));
  }
}

void boot();
