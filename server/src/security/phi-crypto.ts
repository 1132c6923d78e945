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

export function createPhiCrypto(initial: PhiKeyFile): PhiCrypto {
  let ring = createPhiKeyring(initial);
  return {
    ring: () => ring,
    install(file) {
      ring = createPhiKeyring(file);
    },
    seal(value, table, column, rowId) {
      return value === null || value === undefined ? null : ring.encrypt(value, aadOf(table, column, rowId));
    },
    open(stored, table, column, rowId) {
      return stored === null || stored === undefined ? null : ring.decrypt(stored, aadOf(table, column, rowId));
    },
  };
}

