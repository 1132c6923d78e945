import fs from 'node:fs/promises';
import path from 'node:path';
import { exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { z } from 'zod';
import { createOnce } from './key-file.ts';

export const ACCESS_TOKEN_ALG = 'ES256';

export interface SigningKeys {
  /** The key new tokens are signed with. */
  readonly current: { readonly kid: string; readonly key: CryptoKey | Uint8Array };
  /** Every key a token may be verified with, by kid (current and retired ones). */
  readonly verify: ReadonlyMap<string, CryptoKey | Uint8Array>;
}

const jwkSchema = z
  .object({ kty: z.literal('EC'), crv: z.literal('P-256'), kid: z.string().min(1), d: z.string().optional() })
  .loose();
const jwksSchema = z.object({ keys: z.array(jwkSchema).min(1) });

async function fromJwks(json: string, source: string): Promise<SigningKeys> {
  let parsed: z.infer<typeof jwksSchema>;
  try {
    parsed = jwksSchema.parse(JSON.parse(json));
  } catch {
    throw new Error(`${source}: expected a JWK set of P-256 keys ({"keys":[{"kty":"EC","crv":"P-256","kid":…,"d":…}]})`);
  }
  const [first] = parsed.keys;
  if (!first?.d) throw new Error(`${source}: the first key must be a private key (it signs new tokens)`);
  const verify = new Map<string, CryptoKey | Uint8Array>();
  for (const jwk of parsed.keys) {
    const { d: _d, ...pub } = jwk;
    verify.set(jwk.kid, await importJWK(pub as JWK, ACCESS_TOKEN_ALG));
  }
  return { current: { kid: first.kid, key: await importJWK(first as JWK, ACCESS_TOKEN_ALG) }, verify };
}

/**
 * Production passes JWT_PRIVATE_JWKS (first key signs, all verify: rotation is adding a new
 * key first and keeping the old one until its tokens expire). Embedded mode generates a key
 * once and keeps it in the data dir, readable by the owner only.
 */
export async function loadSigningKeys(opts: { privateJwks: string | null; dataDir: string }): Promise<SigningKeys> {
  if (opts.privateJwks) return fromJwks(opts.privateJwks, 'JWT_PRIVATE_JWKS');
  const file = path.join(opts.dataDir, 'keys', 'jwt-signing.jwks.json');
  try {
    return await fromJwks(await fs.readFile(file, 'utf8'), file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const { privateKey } = await generateKeyPair(ACCESS_TOKEN_ALG, { extractable: true });
  const jwk = await exportJWK(privateKey);
  const kid = `fc-${new Date().toISOString().slice(0, 10)}-${Math.random().toString(36).slice(2, 8)}`;
  const json = JSON.stringify({ keys: [{ ...jwk, kid, alg: ACCESS_TOKEN_ALG, use: 'sig' }] }, null, 2);
  // If another process created it first, use theirs.
  return fromJwks(await createOnce(file, json), file);
}
