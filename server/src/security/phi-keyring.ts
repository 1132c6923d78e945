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
 * prefixes, so the database can match "ann" to "Anna" without ever holding the name. The index
 * key rotates with the PHI keys: the previous ones stay in the ring (`previous_index_keys`,
 * oldest first) until every row's tokens are made again under the current one, and search
 * meanwhile asks for the tokens of every index key in the ring.
 */
export interface PhiKeyring {
  readonly currentKeyId: string;
  encrypt(plaintext: string, aad: string): string;
  decrypt(stored: string, aad: string): string;
  /** The key id that wrote a stored value (rotation checks it). */
  keyIdOf(stored: string): string;
  /**
   * Names the current blind-index key (a keyed hash of it, not the key): stored beside the
   * tokens it made, so a rotation finds the rows still under another key.
   */
  readonly indexKeyId: string;
  /** The index key rows without a recorded key id were made with: the first of the ring's. */
  readonly firstIndexKeyId: string;
  /** Blind-index tokens of every word prefix (2–16 chars) of the given names, under the current index key. */
  nameTokens(...names: Array<string | null | undefined>): string[];
  /**
   * The tokens a row must all hold to match a search term (one per word), once per index key
   * in the ring, current first: a row matches if it holds every token of one of the sets.
   */
  searchTokenSets(term: string): string[][];
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
  /** Index keys rotated out whose tokens may still be stored, oldest first (absent before the first rotation). */
  previous_index_keys: z.array(z.string()).optional(),
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
  const previousIndexKeys = (file.previous_index_keys ?? []).map((k, i) => decodeKey(k, `previous PHI index key ${i + 1}`));
  const tokenUnder = (key: Buffer) => (s: string) => createHmac('sha256', key).update(s).digest('base64url').slice(0, 22);
  const token = tokenUnder(indexKey);
  const searchTokens = [token, ...previousIndexKeys.map(tokenUnder)];
  const randomIv = createRandomPool();

  return {
    currentKeyId: file.current,
    indexKeyId: indexKeyIdOf(indexKey),
    firstIndexKeyId: indexKeyIdOf(previousIndexKeys[0] ?? indexKey),
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
    searchTokenSets(term) {
      const words = normaliseName(term).map((w) => w.slice(0, MAX_PREFIX));
      return searchTokens.map((t) => words.map(t));
    },
    lookupToken(purpose, value) {
      // The NUL separator cannot occur in a name token's input, so the two uses never collide.
      return createHmac('sha256', indexKey).update(`${purpose}\0${value}`).digest('base64url');
    },
  };
}

/**
 * An index key's id: an HMAC under the key of a fixed label, so the id names the key without
 * revealing anything of it or of any token. Takes the key as the file holds it (base64) or decoded.
 */
export function indexKeyIdOf(key: Buffer | string): string {
  const bytes = typeof key === 'string' ? decodeKey(key, 'PHI index key') : key;
  return createHmac('sha256', bytes).update('fieldchart blind-index key id').digest('base64url').slice(0, 16);
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
    throw new Error(
      `${source}: expected {"current": id, "keys": [{"id", "key": base64 32 bytes}], "index_key": base64 32 bytes, "previous_index_keys"?: [base64 32 bytes]}`,
    );
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

/**
 * Adds a fresh key and makes it current, and a fresh index key; the old keys stay so existing
 * values still decrypt and existing tokens are still searched until they are made again.
 */
export function rotateKeyFile(file: PhiKeyFile): PhiKeyFile {
  const id = newKeyId();
  return {
    ...file,
    current: id,
    keys: [...file.keys, { id, key: randomBytes(32).toString('base64') }],
    index_key: randomBytes(32).toString('base64'),
    previous_index_keys: [...(file.previous_index_keys ?? []), file.index_key],
  };
}
