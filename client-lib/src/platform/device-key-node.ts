/**
 * The device key in Node: 32 random bytes in `fieldchart-device.key`, mode 0600, inside the
 * data directory. Inside rather than beside it: the key goes wherever the database goes (a
 * copied or restored directory opens; deleting the directory deletes both), and PGlite ignores
 * a file it does not know in its data directory. What the file protects against is the same in
 * both places: the database files alone (a backup of them, a support bundle, a file indexer)
 * show no PHI; someone who can read every file the app's user can read has the key as well.
 * Chosen through the package's `#device-key` import under the `node` condition.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { importDeviceKey, memoryKeyStore, type DeviceKeyStore } from '../storage/device-key.ts';
import { memoryFirstScreenStore, type FirstScreenStore } from '../storage/first-screen.ts';

export const KEY_FILE = 'fieldchart-device.key';
const KEY_BYTES = 32;

export function deviceKeyStoreFor(dataDir: string): DeviceKeyStore {
  if (dataDir.startsWith('memory://')) return memoryKeyStore();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(dataDir) && !dataDir.startsWith('file://')) {
    throw new TypeError(`no device key store for the data dir ${dataDir.split('://')[0]}:// in Node`);
  }
  return fileKeyStore(path.join(dataDir.replace(/^file:\/\//, ''), KEY_FILE));
}

/**
 * True only where the data directory surely holds no database yet (PGlite writes PG_VERSION at
 * its top on initdb): its first open may start from an empty database image (PgliteAssets
 * `loadDataDir`). False where it holds one; a directory it cannot read throws.
 */
export async function surelyHoldsNoDatabase(dataDir: string): Promise<boolean> {
  if (dataDir.startsWith('memory://')) return true;
  try {
    await fs.access(path.join(dataDir.replace(/^file:\/\//, ''), 'PG_VERSION'));
    return false;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw err;
  }
}

/** The sealed first screen (storage/first-screen.ts), beside the key in the data directory. */
export const FIRST_SCREEN_FILE = 'fieldchart-first-screen.sealed';

export function firstScreenStoreFor(dataDir: string): FirstScreenStore {
  if (dataDir.startsWith('memory://')) return memoryFirstScreenStore();
  const file = path.join(dataDir.replace(/^file:\/\//, ''), FIRST_SCREEN_FILE);
  return {
    async get() {
      try {
        return new Uint8Array(await fs.readFile(file));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw err;
      }
    },
    async put(sealed) {
      // Whole or not at all: written beside, then renamed over.
      await fs.writeFile(`${file}.new`, sealed, { mode: 0o600 });
      await fs.rename(`${file}.new`, file);
    },
    async delete() {
      await fs.rm(file, { force: true });
    },
  };
}

export function fileKeyStore(file: string): DeviceKeyStore {
  return {
    where: file,
    async load() {
      let raw: Buffer;
      try {
        raw = await fs.readFile(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw err;
      }
      if (raw.length !== KEY_BYTES) throw new Error(`the device key file ${file} is not a key (${raw.length} bytes)`);
      // A copy made with a looser mode (cp without -p, an archive) is tightened again.
      if (((await fs.stat(file)).mode & 0o077) !== 0) await fs.chmod(file, 0o600);
      return importDeviceKey(raw);
    },
    async create() {
      const raw = globalThis.crypto.getRandomValues(new Uint8Array(KEY_BYTES));
      await fs.mkdir(path.dirname(file), { recursive: true });
      // Written whole beside, then renamed over: the file never holds half a key.
      const next = `${file}.new`;
      const handle = await fs.open(next, 'w', 0o600);
      try {
        await handle.chmod(0o600); // an existing leftover keeps its mode otherwise
        await handle.writeFile(raw);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fs.rename(next, file);
      const key = await importDeviceKey(raw);
      raw.fill(0);
      return key;
    },
    async wipe() {
      try {
        // Overwritten before it is unlinked: on a plain disk the old blocks then hold zeros.
        const handle = await fs.open(file, 'r+');
        try {
          await handle.write(new Uint8Array(KEY_BYTES), 0, KEY_BYTES, 0);
          await handle.sync();
        } finally {
          await handle.close();
        }
        await fs.unlink(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      }
    },
  };
}
