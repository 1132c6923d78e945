/**
 * The field app (app/, built by scripts/build-app.ts) served at /app: static files with their
 * own cache rules and content policy. Content-hashed files are cached for good; the page, the
 * service worker, the manifest and PGlite's fixed-name assets are revalidated (ETag) on every
 * fetch, so a new build reaches devices on their next online start. The app carries no PHI:
 * its data comes from the API (no-store) into the device's own database.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

export const FIELD_APP_PREFIX = '/app/';

/**
 * What the page may do: its own scripts and styles, WebAssembly (PGlite), the API and the sync
 * socket on this origin ('self' covers ws:/wss: to the same host), its service worker and
 * manifest, recorded audio as blob: URLs. Nothing framed, no inline script.
 */
export const FIELD_APP_CSP = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "connect-src 'self'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob:",
  "worker-src 'self'",
  "manifest-src 'self'",
  "style-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'no-cache';

/** `app-<12 hex>.js|css` names change with their content; every other file keeps its name. */
export function fieldAppCacheControl(file: string): string {
  return /^app-[0-9a-f]{12}\.(js|css)$/.test(file) ? IMMUTABLE : REVALIDATE;
}

/**
 * Where the built app is when FIELD_APP_DIR is unset: beside the server bundle (dist/app, from
 * `npm run build`) or in the checkout (app/dist, from `npm start`'s prestart build).
 */
export function defaultFieldAppDir(): string | null {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.resolve(here, '../app'), path.resolve(here, '../../../app/dist')];
  return candidates.find((dir) => fs.existsSync(path.join(dir, 'index.html'))) ?? null;
}

export interface FieldAppOptions {
  /** The built app's directory (it holds index.html). */
  readonly dir: string;
}

/** Registered at the root; its routes and hooks stay inside this plugin's scope. */
export async function fieldApp(app: FastifyInstance, opts: FieldAppOptions): Promise<void> {
  // Runs after the root's security headers (no-store, the API's CSP) and replaces both.
  app.addHook('onSend', async (request, reply, payload) => {
    if (reply.statusCode >= 400) return payload;
    const file = (request.url.split('?')[0] ?? '').slice(FIELD_APP_PREFIX.length) || 'index.html';
    reply.header('cache-control', fieldAppCacheControl(file));
    reply.header('content-security-policy', FIELD_APP_CSP);
    return payload;
  });
  // /app → /app/: the page's relative URLs (app-….js, sw.js) resolve under /app/.
  app.get(FIELD_APP_PREFIX.slice(0, -1), { schema: { hide: true } }, (_request, reply) => reply.redirect(FIELD_APP_PREFIX, 301));
  await app.register(fastifyStatic, {
    root: opts.dir,
    prefix: FIELD_APP_PREFIX,
    index: ['index.html'],
    // The build writes a .gz beside each compressible file; clients that accept gzip get it.
    preCompressed: true,
    cacheControl: false,
    etag: true,
    lastModified: true,
    decorateReply: false,
    wildcard: true,
    serveDotFiles: false,
  });
}
