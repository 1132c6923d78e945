/**
 * PGlite's WebAssembly and file-system bundle, read and compiled once per process and handed to
 * every database thread it starts (pglite-thread-client.ts). Left to itself, PGlite in each new
 * thread reads all three files and compiles its 9 MB module again: a process that opens several
 * databases (a test file opens one per test; a backup restore, a second) paid for that each time.
 */
import fs from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { PgliteAssets } from './pglite-thread-protocol.ts';

let loaded: Promise<PgliteAssets> | null = null;

export function pgliteAssets(): Promise<PgliteAssets> {
  loaded ??= load().catch((err: unknown) => {
    loaded = null;
    throw err;
  });
  return loaded;
}

async function load(): Promise<PgliteAssets> {
  const read = (name: string) => fs.readFile(fileURLToPath(import.meta.resolve(`@electric-sql/pglite/${name}`)));
  const [pglite, initdb, bundle] = await Promise.all([read('pglite.wasm'), read('initdb.wasm'), read('pglite.data')]);
  const [pgliteWasmModule, initdbWasmModule] = await Promise.all([WebAssembly.compile(pglite), WebAssembly.compile(initdb)]);
  // Copied into an ArrayBuffer of its own: a read file's Buffer may be a view into a larger one.
  return { pgliteWasmModule, initdbWasmModule, fsBundle: new Uint8Array(bundle).buffer };
}
