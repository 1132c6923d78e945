/**
 * An empty PGlite database image for the offline client's devices (PgliteAssets `loadDataDir`):
 * made once per PGlite version by the library's own `makeEmptyDeviceImage` and kept beside the
 * server's template, so a test's device opens without running initdb again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { makeEmptyDeviceImage } from '../../client-lib/src/index.ts';
import { EMPTY_IMAGE_KIND } from '../../client-lib/src/storage/pglite-options.ts';
import { cachedArchive } from './backends.ts';

const version = (JSON.parse(fs.readFileSync(path.resolve('node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string }).version;

let image: Promise<Blob> | null = null;

export function emptyDeviceImage(): Promise<Blob> {
  return (image ??= cachedArchive(`device-empty-pglite-${version}-${EMPTY_IMAGE_KIND}.tar`, makeEmptyDeviceImage));
}
