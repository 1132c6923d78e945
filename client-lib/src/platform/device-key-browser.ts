/**
 * The device key in browsers: a non-extractable CryptoKey, kept in a small IndexedDB database
 * of its own (`fieldchart-device-keys`, one entry per `dataDir`). IndexedDB stores a CryptoKey
 * by structured clone and gives the same non-extractable key back: no script, ours included,
 * can read its bytes. (The browser itself writes it into its profile on disk: this protects
 * the key from scripts, not from someone holding the profile's files.)
 * Chosen through the package's `#device-key` import by every condition but `node`.
 */
import { generateDeviceKey, memoryKeyStore, type DeviceKeyStore } from '../storage/device-key.ts';
import { memoryFirstScreenStore, type FirstScreenStore } from '../storage/first-screen.ts';

const DB_NAME = 'fieldchart-device-keys';
const STORE = 'keys';

export function deviceKeyStoreFor(dataDir: string): DeviceKeyStore {
  if (dataDir.startsWith('memory://')) return memoryKeyStore();
  return indexedDbKeyStore(dataDir);
}

function request<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function openStoreDb(name: string): Promise<IDBDatabase> {
  const idb = (globalThis as { indexedDB?: IDBFactory }).indexedDB;
  if (!idb) return Promise.reject(new Error('this platform has no IndexedDB to keep the device key in'));
  const req = idb.open(name, 1);
  req.onupgradeneeded = () => {
    if (!req.result.objectStoreNames.contains(STORE)) req.result.createObjectStore(STORE);
  };
  return request(req);
}

async function withStore<T>(mode: IDBTransactionMode, fn: (store: IDBObjectStore) => IDBRequest<T>, dbName: string = DB_NAME): Promise<T> {
  const db = await openStoreDb(dbName);
  try {
    const tx = db.transaction(STORE, mode);
    // A write counts once its transaction has committed, not when its request succeeded.
    const committed = new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error);
      tx.onabort = () => reject(tx.error ?? new Error('the device key transaction was aborted'));
    });
    const result = request(fn(tx.objectStore(STORE)));
    await Promise.all([result, committed]);
    return await result;
  } finally {
    db.close();
  }
}

export function indexedDbKeyStore(dataDir: string): DeviceKeyStore {
  return {
    where: `IndexedDB ${DB_NAME}/${dataDir}`,
    async load() {
      const key = await withStore('readonly', (s) => s.get(dataDir) as IDBRequest<CryptoKey | undefined>);
      return key ?? null;
    },
    async create() {
      const key = await generateDeviceKey();
      try {
        // `add`, not `put`: another tab of the app that made a key first keeps it, and we use it.
        await withStore('readwrite', (s) => s.add(key, dataDir));
        return key;
      } catch (err) {
        if ((err as { name?: string } | null)?.name !== 'ConstraintError') throw err;
        const theirs = await this.load();
        if (!theirs) throw err;
        return theirs;
      }
    },
    async wipe() {
      await withStore('readwrite', (s) => s.delete(dataDir));
    },
  };
}

/** The sealed first screen (storage/first-screen.ts): its own IndexedDB database, one entry per `dataDir`. */
const FIRST_SCREEN_DB = 'fieldchart-first-screen';

/**
 * True only where the data directory surely holds no database yet: one in memory, or an
 * IndexedDB one whose IndexedDB database (PGlite's IDBFS names it `/pglite/<name>`) does not
 * exist. Where the browser cannot list its IndexedDB databases it says false, and the first
 * open runs initdb (once) instead of loading the empty image.
 */
export async function surelyHoldsNoDatabase(dataDir: string): Promise<boolean> {
  if (dataDir.startsWith('memory://')) return true;
  if (!dataDir.startsWith('idb://')) return false;
  const idb = (globalThis as { indexedDB?: IDBFactory }).indexedDB;
  if (typeof idb?.databases !== 'function') return false;
  const name = `/pglite/${dataDir.slice('idb://'.length)}`;
  try {
    return !(await idb.databases()).some((d) => d.name === name);
  } catch {
    return false;
  }
}

export function firstScreenStoreFor(dataDir: string): FirstScreenStore {
  if (dataDir.startsWith('memory://')) return memoryFirstScreenStore();
  return {
    async get() {
      const sealed = await withStore('readonly', (s) => s.get(dataDir) as IDBRequest<Uint8Array | undefined>, FIRST_SCREEN_DB);
      return sealed ?? null;
    },
    async put(sealed) {
      await withStore('readwrite', (s) => s.put(sealed, dataDir), FIRST_SCREEN_DB);
    },
    async delete() {
      await withStore('readwrite', (s) => s.delete(dataDir), FIRST_SCREEN_DB);
    },
  };
}
