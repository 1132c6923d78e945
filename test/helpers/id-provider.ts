/**
 * A stand-in for Google's and Apple's key endpoints: a local HTTP server publishing a JWKS
 * of test keys, and a signer for ID tokens with those keys. The server under test verifies
 * them with its real code (jose's remote key set) against GOOGLE_JWKS_URL / APPLE_JWKS_URL.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';

export interface IdTokenClaims {
  sub: string;
  aud?: string;
  iss?: string;
  email?: string;
  email_verified?: boolean;
  expiresInSeconds?: number;
  kid?: string;
  /** Sign with a key the JWKS does not publish. */
  foreignKey?: boolean;
}

export interface IdProvider {
  readonly jwksUrl: string;
  readonly issuer: string;
  /** How many times the JWKS was fetched. */
  fetches(): number;
  sign(claims: IdTokenClaims): Promise<string>;
  close(): Promise<void>;
}

export async function startIdProvider(
  provider: 'google' | 'apple',
  audience: string,
  opts: { /** Answer every JWKS request with this status (an outage) instead of the keys. */ failWith?: number } = {},
): Promise<IdProvider> {
  const issuer = provider === 'google' ? 'https://accounts.google.com' : 'https://appleid.apple.com';
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const foreign = await generateKeyPair('RS256');
  const kid = `${provider}-test-key-1`;
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  let count = 0;
  const server = http.createServer((req, res) => {
    count++;
    if (opts.failWith !== undefined) {
      res.writeHead(opts.failWith, { 'content-type': 'text/plain' });
      res.end('unavailable');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'public, max-age=3600' });
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    jwksUrl: `http://127.0.0.1:${port}/keys`,
    issuer,
    fetches: () => count,
    async sign(c) {
      const now = Math.floor(Date.now() / 1000);
      const payload: Record<string, unknown> = {};
      if (c.email !== undefined) payload.email = c.email;
      if (c.email_verified !== undefined) payload.email_verified = c.email_verified;
      return new SignJWT(payload)
        .setProtectedHeader({ alg: 'RS256', kid: c.kid ?? kid, typ: 'JWT' })
        .setIssuer(c.iss ?? issuer)
        .setAudience(c.aud ?? audience)
        .setSubject(c.sub)
        .setIssuedAt(now - 5)
        .setExpirationTime(now + (c.expiresInSeconds ?? 600))
        .sign(c.foreignKey ? foreign.privateKey : privateKey);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
