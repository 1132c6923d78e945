import { createRemoteJWKSet, errors, jwtVerify } from 'jose';
import { Unavailable } from '../errors.ts';

export type SocialProvider = 'google' | 'apple';

export interface VerifiedIdentity {
  readonly provider: SocialProvider;
  readonly subject: string;
  /** The provider's email claim, when it has one and says it is verified. */
  readonly verifiedEmail: string | null;
}

export interface IdTokenVerifier {
  /** Resolves the identity, or null when the token is not valid for this server. */
  verify(provider: SocialProvider, idToken: string, now: Date): Promise<VerifiedIdentity | null>;
}

const ISSUERS: Record<SocialProvider, string[]> = {
  google: ['https://accounts.google.com', 'accounts.google.com'],
  apple: ['https://appleid.apple.com'],
};

/**
 * jose's remote key set caches keys (cacheMaxAge) and refetches on an unknown `kid` at most
 * once per cooldown, so a flood of forged kids cannot turn into a flood of JWKS requests.
 */
export function createIdTokenVerifier(opts: {
  providers: Record<SocialProvider, { clientIds: readonly string[]; jwksUrl: string }>;
  cooldownMs?: number;
}): IdTokenVerifier {
  const sets = new Map<SocialProvider, ReturnType<typeof createRemoteJWKSet>>();
  const jwksFor = (provider: SocialProvider) => {
    let set = sets.get(provider);
    if (!set) {
      set = createRemoteJWKSet(new URL(opts.providers[provider].jwksUrl), {
        cooldownDuration: opts.cooldownMs ?? 30_000,
        cacheMaxAge: 10 * 60_000,
        timeoutDuration: 5_000,
      });
      sets.set(provider, set);
    }
    return set;
  };
  return {
    async verify(provider, idToken, now) {
      const audiences = opts.providers[provider].clientIds;
      if (audiences.length === 0) return null;
      try {
        const { payload } = await jwtVerify(idToken, jwksFor(provider), {
          issuer: ISSUERS[provider],
          audience: [...audiences],
          algorithms: ['RS256', 'ES256'],
          currentDate: now,
          requiredClaims: ['sub', 'exp', 'iat'],
        });
        if (!payload.sub) return null;
        const verified = payload.email_verified === true || payload.email_verified === 'true';
        const email = typeof payload.email === 'string' && verified ? payload.email.trim().toLowerCase() : null;
        return { provider, subject: payload.sub, verifiedEmail: email };
      } catch (err) {
        // A provider we cannot reach, or whose key endpoint answers non-200 or not JSON (jose's
        // generic error), is our outage, not the user's bad token.
        const keyEndpointFailed = err instanceof errors.JOSEError && err.code === 'ERR_JOSE_GENERIC';
        if (err instanceof errors.JWKSTimeout || keyEndpointFailed || (err instanceof TypeError && /fetch/i.test(err.message))) {
          throw new Unavailable('The identity provider could not be reached; try again shortly', 'identity_provider_unavailable');
        }
        return null;
      }
    },
  };
}
