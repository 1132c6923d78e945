/**
 * The cipher of the device database's PHI: AES-256-GCM (WebCrypto, the same in Node 20 and
 * browsers) under the device key. A sealed value is `version (1 byte) | IV (12) | ciphertext
 * and tag`; the IV is random per value. Each value is sealed with additional data naming its
 * place (table and row key, see `ad`), so a ciphertext moved to another row no longer opens.
 */

const VERSION = 1;
const IV_BYTES = 12;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** WebCrypto's types want views of an ArrayBuffer; ours always are (never a SharedArrayBuffer). */
const view = (b: Uint8Array) => b as Uint8Array<ArrayBuffer>;

/** Seals and opens values of the device database. */
export interface RowCipher {
  seal(plain: Uint8Array, ad: string): Promise<Uint8Array>;
  open(sealed: Uint8Array, ad: string): Promise<Uint8Array>;
}

/** The additional data of a value: its table and row key, joined so that no two places share one. */
export function ad(...parts: readonly (string | number | null)[]): string {
  return parts.map((p) => (p === null ? '' : String(p))).join('\u0000');
}

/** A value sealed with a key that is not the one it was sealed with, or with other additional data. */
export class SealBrokenError extends Error {
  override readonly name = 'SealBrokenError';
}

export function aesGcmCipher(key: CryptoKey): RowCipher {
  const subtle = globalThis.crypto.subtle;
  return {
    async seal(plain, data) {
      const iv = globalThis.crypto.getRandomValues(new Uint8Array(IV_BYTES));
      const ct = new Uint8Array(await subtle.encrypt({ name: 'AES-GCM', iv, additionalData: encoder.encode(data) }, key, view(plain)));
      const out = new Uint8Array(1 + IV_BYTES + ct.length);
      out[0] = VERSION;
      out.set(iv, 1);
      out.set(ct, 1 + IV_BYTES);
      return out;
    },
    async open(sealed, data) {
      if (sealed[0] !== VERSION || sealed.length < 1 + IV_BYTES + 16) throw new SealBrokenError('not a sealed value of this version');
      try {
        const plain = await subtle.decrypt(
          { name: 'AES-GCM', iv: view(sealed.subarray(1, 1 + IV_BYTES)), additionalData: encoder.encode(data) },
          key,
          view(sealed.subarray(1 + IV_BYTES)),
        );
        return new Uint8Array(plain);
      } catch (err) {
        throw new SealBrokenError('a sealed value does not open with the device key in its place', { cause: err });
      }
    },
  };
}

export async function sealJson(c: RowCipher, value: unknown, data: string): Promise<Uint8Array> {
  return c.seal(encoder.encode(JSON.stringify(value)), data);
}

export async function openJson<T>(c: RowCipher, sealed: Uint8Array, data: string): Promise<T> {
  return JSON.parse(decoder.decode(await c.open(sealed, data))) as T;
}

/** Base64 of bytes, for sealed values passed inside one JSON parameter (`decode(x, 'base64')`). */
export function toBase64(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}
