import { randomUUID } from 'node:crypto';
import { errors, jwtVerify, SignJWT } from 'jose';
import { ACCESS_TOKEN_ALG, type SigningKeys } from './signing-keys.ts';

export const TOKEN_PANEL = 'therapist';
const TYP = 'at+jwt';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const isUuid = (v: unknown): v is string => typeof v === 'string' && UUID.test(v);

export interface AccessClaims {
  readonly userId: string;
  readonly sessionId: string;
  readonly expiresAt: Date;
}

export interface AccessTokens {
  issue(userId: string, sessionId: string, now: Date): Promise<{ token: string; expiresIn: number }>;
  /** Resolves the claims, or null for any token that is not one of ours and current. */
  verify(token: string, now: Date): Promise<AccessClaims | null>;
}

export function createAccessTokens(opts: {
  keys: SigningKeys;
  issuer: string;
  audience: string;
  ttlSeconds: number;
}): AccessTokens {
  const { keys, issuer, audience, ttlSeconds } = opts;
  return {
    async issue(userId, sessionId, now) {
      const iat = Math.floor(now.getTime() / 1000);
      const token = await new SignJWT({ sid: sessionId, token_panel: TOKEN_PANEL })
        .setProtectedHeader({ alg: ACCESS_TOKEN_ALG, kid: keys.current.kid, typ: TYP })
        .setSubject(userId)
        .setIssuer(issuer)
        .setAudience(audience)
        .setIssuedAt(iat)
        .setExpirationTime(iat + ttlSeconds)
        .setJti(randomUUID())
        .sign(keys.current.key);
      return { token, expiresIn: ttlSeconds };
    },
    async verify(token, now) {
      try {
        const { payload } = await jwtVerify(
          token,
          async (header) => {
            const key = header.kid ? keys.verify.get(header.kid) : undefined;
            if (!key) throw new errors.JWKSNoMatchingKey();
            return key;
          },
          {
            algorithms: [ACCESS_TOKEN_ALG],
            issuer,
            audience,
            typ: TYP,
            currentDate: now,
            requiredClaims: ['sub', 'exp', 'iat', 'jti'],
          },
        );
        // sub and sid are database ids: anything else cannot be ours (and must not reach a uuid column).
        if (payload.token_panel !== TOKEN_PANEL || !isUuid(payload.sid) || !isUuid(payload.sub) || !payload.exp) {
          return null;
        }
        return { userId: payload.sub, sessionId: payload.sid, expiresAt: new Date(payload.exp * 1000) };
      } catch {
        return null;
      }
    },
  };
}
