import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { createOnce } from './key-file.ts';
import { createRandomPool } from './random-pool.ts';

/**
 * PHI at rest: AES-256-GCM under a key ring. Each value is stored as
 * `fc1.<key id>.<iv>.<ciphertext+tag>` (base64url), so the key that wrote it is named beside
 * it and old keys keep decrypting after a rotation. The associated data binds a value to its
 * column and row: a ciphertext copied into another row or column does not decrypt.
 *
 * Name search uses a keyed blind index: HMAC-SHA-256 (a separate key) of normalised name
 * prefixes, so the database can match "ann" to "Anna" without ever holding the name.
 */
export interface PhiKeyring {
  readonly currentKeyId: string;
  encrypt(plaintext: string, aad: string): string;
  decrypt(stored: string, aad: string): string;
  /** The key id that wrote a stored value (rotation checks it). */
  keyIdOf(stored: string): string;
  /** Blind-index tokens of every word prefix (2–16 chars) of the given names. */
  nameTokens(...names: Array<string | null | undefined>): string[];
  /** Tokens a search term must all match (one per word). */
  searchTokens(term: string): string[];
  /** A keyed HMAC for exact-match lookups of a PHI value (the geocode cache's address key); `purpose` separates uses. */
  lookupToken(purpose: string, value: string): string;
}

const PREFIX = 'fc1';
const MIN_PREFIX = 2;
const MAX_PREFIX = 16;

const keyFileSchema = z.object({
  current: z.string().min(1),
  keys: z.array(z.object({ id: z.string().regex(/^[A-Za-z0-9_-]+$/), key: z.string() })).min(1),
  index_key: z.string(),
});
export type PhiKeyFile = z.infer<typeof keyFileSchema>;

function decodeKey(b64: string, what: string): Buffer {
  const key = Buffer.from(b64, 'base64');
  if (key.length !== 32) throw new Error(`${what} must be 32 bytes, base64-encoded`);
  return key;
}

/** Lower-cased, accents removed (é → e), words of letters and digits only. */
export function normaliseName(value: string): string[] {
  return value
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

export function createPhiKeyring(file: PhiKeyFile): PhiKeyring {
  const keys = new Map(file.keys.map((k) => [k.id, decodeKey(k.key, `PHI key ${k.id}`)]));
  const current = keys.get(file.current);
  if (!current) throw new Error(`PHI key ring: current key ${file.current} is not in the ring`);
  const indexKey = decodeKey(file.index_key, 'PHI index key');
  const token = (s: string) => createHmac('sha256', indexKey).update(s).digest('base64url').slice(0, 22);
  const randomIv = createRandomPool();

  return {
    currentKeyId: file.current,
    encrypt(plaintext, aad) {
      const iv = randomIv(12);
      const cipher = createCipheriv('aes-256-gcm', current, iv);
      cipher.setAAD(Buffer.from(aad));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return `${PREFIX}.${file.current}.${iv.toString('base64url')}.${body.toString('base64url')}`;
    },
    decrypt(stored, aad) {
      const [prefix, kid, ivText, bodyText] = stored.split('.');
      const key = kid ? keys.get(kid) : undefined;
      if (prefix !== PREFIX || !key || !ivText || !bodyText) throw new Error('PHI value is not decryptable with this key ring');
      const body = Buffer.from(bodyText, 'base64url');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(ivText, 'base64url'));
      decipher.setAAD(Buffer.from(aad));
      decipher.setAuthTag(body.subarray(body.length - 16));
      return Buffer.concat([decipher.update(body.subarray(0, body.length - 16)), decipher.final()]).toString('utf8');
    },
    keyIdOf(stored) {
      return stored.split('.')[1] ?? '';
    },
    nameTokens(...names) {
      const out = new Set<string>();
      for (const name of names) {
        for (const word of normaliseName(name ?? '')) {
          for (let n = Math.min(MIN_PREFIX, word.length); n <= Math.min(MAX_PREFIX, word.length); n++) out.add(token(word.slice(0, n)));
        }
      }
      return [...out].sort();
    },
    searchTokens(term) {
      return normaliseName(term).map((w) => token(w.slice(0, MAX_PREFIX)));
    },
    lookupToken(purpose, value) {
      // The NUL separator cannot occur in a name token's input, so the two uses never collide.
      return createHmac('sha256', indexKey).update(`${purpose}\0${value}`).digest('base64url');
    },
  };
}

export function newKeyId(): string {
  return `k${new Date().toISOString().slice(0, 10).replaceAll('-', '')}${randomBytes(3).toString('hex')}`;
}

export function generateKeyFile(): PhiKeyFile {
  const id = newKeyId();
  return { current: id, keys: [{ id, key: randomBytes(32).toString('base64') }], index_key: randomBytes(32).toString('base64') };
}

export function parseKeyFile(json: string, source: string): PhiKeyFile {
  try {
    return keyFileSchema.parse(JSON.parse(json));
  } catch {
    throw new Error(`${source}: expected {"current": id, "keys": [{"id", "key": base64 32 bytes}], "index_key": base64 32 bytes}`);
  }
}

export const phiKeyFileOf = (dataDir: string) => path.join(dataDir, 'keys', 'phi-keys.json');

/**
 * Production passes PHI_KEYS (the JSON above). Embedded mode generates the ring once and
 * keeps it in the data dir with mode 0600.
 */
export async function loadPhiKeyFile(opts: { phiKeys: string | null; dataDir: string }): Promise<PhiKeyFile> {
  if (opts.phiKeys) return parseKeyFile(opts.phiKeys, 'PHI_KEYS');
  const file = phiKeyFileOf(opts.dataDir);
  const existing = await readPhiKeyFile(file);
  if (existing) return existing;
  return parseKeyFile(await createOnce(file, JSON.stringify(generateKeyFile(), null, 2)), file);
}

/** The key file as it is on disk, or null when there is none; never creates one. */
export async function readPhiKeyFile(file: string): Promise<PhiKeyFile | null> {
  try {
    return parseKeyFile(await fs.readFile(file, 'utf8'), file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Adds a fresh key and makes it current; old keys stay so existing values still decrypt. */
export function rotateKeyFile(file: PhiKeyFile): PhiKeyFile {
  const id = newKeyId();
  return { ...file, current: id, keys: [...file.keys, { id, key: randomBytes(32).toString('base64') }] };
}
