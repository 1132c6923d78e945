/**
 * An empty PGlite database image for the offline client's devices in memory (PgliteAssets
 * `loadDataDir`): made once per PGlite version with PGlite's own initdb and kept beside the
 * server's template, so a test's device opens without running initdb again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { cachedArchive } from './backends.ts';

const version = (JSON.parse(fs.readFileSync(path.resolve('node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string }).version;

let image: Promise<Blob> | null = null;

export function emptyDeviceImage(): Promise<Blob> {
  return (image ??= cachedArchive(`device-empty-pglite-${version}.tar`, async () => {
    const pglite = await PGlite.create('memory://');
    const blob = await pglite.dumpDataDir('none');
    await pglite.close();
    return blob;
  }));
}
