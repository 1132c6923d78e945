/**
 * An empty PGlite database image for the offline client's devices in memory (PgliteAssets
 * `loadDataDir`): made once per PGlite version with PGlite's own initdb and kept beside the
 * server's template, so a test's device opens without running initdb again.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';

const version = (JSON.parse(fs.readFileSync(path.resolve('node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string }).version;
const file = path.join(os.tmpdir(), 'fieldchart-test-cache', `device-empty-pglite-${version}.tar`);

let image: Promise<Blob> | null = null;

async function made(): Promise<Blob> {
  if (fs.existsSync(file)) return new Blob([fs.readFileSync(file)]);
  const pglite = await PGlite.create('memory://');
  const blob = await pglite.dumpDataDir('none');
  await pglite.close();
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, Buffer.from(await blob.arrayBuffer()));
  fs.renameSync(tmp, file); // atomic: parallel test processes never read half a file
  return blob;
}

export function emptyDeviceImage(): Promise<Blob> {
  return (image ??= made());
}
