import { createPhiKeyring, type PhiKeyFile, type PhiKeyring } from './phi-keyring.ts';

/**
 * The key ring in use, swappable at run time: `fieldchart keys rotate` on a running embedded
 * server installs the new ring here without a restart.
 */
export interface PhiCrypto {
  ring(): PhiKeyring;
  install(file: PhiKeyFile): void;
  /** Encrypts an optional value: null and undefined stay as they are. */
  seal(value: string | null | undefined, table: string, column: string, rowId: string): string | null;
  open(stored: string | null | undefined, table: string, column: string, rowId: string): string | null;
}

export const aadOf = (table: string, column: string, rowId: string) => `${table}.${column}:${rowId}`;

export interface PhiCryptoOptions {
  /**
   * Re-reads the key ring (the data-dir key file) when a value names a key id this ring does
   * not hold: another process — `fieldchart keys rotate` on PostgreSQL — rotated the file.
   */
  readonly reload?: () => PhiKeyFile | null;
}

export function createPhiCrypto(initial: PhiKeyFile, opts: PhiCryptoOptions = {}): PhiCrypto {
  let ring = createPhiKeyring(initial);
  let ids = new Set(initial.keys.map((k) => k.id));
  // Key ids a re-read file did not have either: a value under one of them (corrupt, or from
  // another deployment) must not cost a synchronous file read on every decrypt. A rotation
  // writes its key file before any value is sealed under the new id, so a remembered id
  // cannot turn up later; the set is bounded all the same.
  const missing = new Set<string>();
  const install = (file: PhiKeyFile) => {
    ring = createPhiKeyring(file);
    ids = new Set(file.keys.map((k) => k.id));
    missing.clear();
  };
  const decrypt = (stored: string, aad: string) => {
    try {
      return ring.decrypt(stored, aad);
    } catch (err) {
      const kid = ring.keyIdOf(stored);
      if (!opts.reload || ids.has(kid) || missing.has(kid)) throw err;
      const file = opts.reload();
      if (!file?.keys.some((k) => k.id === kid)) {
        // An unreadable file (null) is not remembered: the next decrypt tries again.
        if (file) {
          if (missing.size >= 1024) missing.clear();
          missing.add(kid);
        }
        throw err;
      }
      install(file);
      return ring.decrypt(stored, aad);
    }
  };
  return {
    ring: () => ring,
    install,
    seal(value, table, column, rowId) {
      return value === null || value === undefined ? null : ring.encrypt(value, aadOf(table, column, rowId));
    },
    open(stored, table, column, rowId) {
      return stored === null || stored === undefined ? null : decrypt(stored, aadOf(table, column, rowId));
    },
  };
}

