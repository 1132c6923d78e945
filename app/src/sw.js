// The field app's service worker (plain JS: the build prepends SHELL and VERSION). It keeps
// the app shell so the app opens offline; the API and the sync socket always go to the network
// (their answers are PHI and no-store). A new build has a new VERSION: the old cache is dropped.
/* global SHELL, VERSION */
const CACHE = `fieldchart-app-${VERSION}`;
// Paths under the worker's scope (/app/ on the server), so the app may be mounted anywhere.
const FILES = SHELL.map((f) => new URL(f, self.registration.scope).pathname);

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(FILES)).then(() => self.skipWaiting()));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((k) => k.startsWith('fieldchart-app-') && k !== CACHE).map((k) => caches.delete(k))))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  const shell = new URL('./', self.registration.scope);
  if (url.origin !== shell.origin || !url.pathname.startsWith(shell.pathname)) return;
  // Navigations inside the app (any hash route) get index.html.
  const key = request.mode === 'navigate' ? shell.pathname : url.pathname;
  if (!FILES.includes(key)) return;
  event.respondWith(caches.open(CACHE).then((cache) => cache.match(key).then((hit) => hit ?? fetch(request))));
});
