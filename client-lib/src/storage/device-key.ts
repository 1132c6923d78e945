/**
 * Where the device key lives. The key encrypts the PHI of the device database (row-cipher.ts);
 * it is made on the first open and destroyed when the user's data is wiped (sign-out, another
 * user). Each platform keeps it its own way (platform/device-key-*.ts, chosen by the package's
 * `#device-key` import): a non-extractable CryptoKey in IndexedDB in browsers, a 0600 file in
 * the data directory in Node, nothing but memory for `memory://`.
 */

/** A place that holds at most one device key. */
export interface DeviceKeyStore {
  /** For messages: where the key is kept (never the key). */
  readonly where: string;
  /** The stored key, or null if there is none. */
  load(): Promise<CryptoKey | null>;
  /**
   * Makes, stores and answers a new key where none is stored (after `wipe`, or the first time).
   * If another opener of the same database stored one meanwhile (a second tab), answers that one.
   */
  create(): Promise<CryptoKey>;
  /** Destroys the stored key; what it sealed can no longer be read. */
  wipe(): Promise<void>;
}

const AES_GCM_256 = { name: 'AES-GCM', length: 256 } as const;
const USAGES: KeyUsage[] = ['encrypt', 'decrypt'];

/** A new AES-256-GCM key that no script can read out (`extractable: false`). */
export function generateDeviceKey(): Promise<CryptoKey> {
  return globalThis.crypto.subtle.generateKey(AES_GCM_256, false, USAGES);
}

/** The key of 32 raw bytes, as a non-extractable CryptoKey. */
export function importDeviceKey(raw: Uint8Array): Promise<CryptoKey> {
  return globalThis.crypto.subtle.importKey('raw', raw as Uint8Array<ArrayBuffer>, AES_GCM_256, false, USAGES);
}

/** `memory://`: the database goes with the process, and so does its key. */
export function memoryKeyStore(): DeviceKeyStore {
  let key: CryptoKey | null = null;
  return {
    where: 'memory',
    load: async () => key,
    async create() {
      key = await generateDeviceKey();
      return key;
    },
    async wipe() {
      key = null;
    },
  };
}
