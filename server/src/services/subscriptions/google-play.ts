import { createRemoteJWKSet, importPKCS8, jwtVerify, SignJWT } from 'jose';
import { z } from 'zod';
import type { Clock } from '../../clock.ts';
import type { GooglePlayConfig } from '../../config.ts';
import { Unauthorized } from '../../errors.ts';
import { invalidReceipt, storeUnavailable, type StoreSubscription } from './store-subscription.ts';

const SCOPE = 'https://www.googleapis.com/auth/androidpublisher';
/** Renew the access token this long before Google says it expires (clock skew, slow requests). */
const TOKEN_MARGIN_MS = 60_000;

/** The parts of a SubscriptionPurchaseV2 we use (purchases.subscriptionsv2.get). */
const subscriptionPurchaseV2 = z.object({
  subscriptionState: z.string(),
  acknowledgementState: z.string().optional(),
  testPurchase: z.object({}).loose().optional(),
  lineItems: z.array(z.object({ productId: z.string(), expiryTime: z.string().optional() }).loose()).min(1),
});

/** States in which the subscriber keeps access until expiryTime (CANCELED: auto-renew off, paid period runs). */
const ENTITLED = new Set(['SUBSCRIPTION_STATE_ACTIVE', 'SUBSCRIPTION_STATE_IN_GRACE_PERIOD', 'SUBSCRIPTION_STATE_CANCELED']);

/** Real-time developer notification types that mean a refund or revocation (SUBSCRIPTION_REVOKED). */
const REVOKED_TYPES = new Set([12]);

export interface GoogleNotification {
  readonly notificationId: string;
  readonly kind: string;
  /** Present for subscription notifications of our package. */
  readonly purchaseToken: string | null;
  readonly revoked: boolean;
}

export interface GooglePlay {
  /** purchases.subscriptionsv2.get, normalised; `revoked` marks a refund the notification told of. */
  subscription(purchaseToken: string, opts?: { revoked?: boolean }): Promise<StoreSubscription & { acknowledged: boolean }>;
  /** purchases.subscriptions.acknowledge: unacknowledged purchases are refunded by Google after three days. */
  acknowledge(productId: string, purchaseToken: string): Promise<void>;
  /** Verifies a Pub/Sub push (its OIDC bearer token) and decodes the developer notification. */
  notification(authorization: string | undefined, body: PubSubPush): Promise<GoogleNotification>;
}

export const pubSubPush = z.object({
  message: z.object({ data: z.string().max(65_536), messageId: z.string().min(1).max(200) }).loose(),
  subscription: z.string().max(500).optional(),
});
export type PubSubPush = z.infer<typeof pubSubPush>;

const developerNotification = z
  .object({
    packageName: z.string(),
    subscriptionNotification: z.object({ notificationType: z.number().int(), purchaseToken: z.string().min(1) }).loose().optional(),
    testNotification: z.object({}).loose().optional(),
  })
  .loose();

export function createGooglePlay(c: GooglePlayConfig, deps: { clock: Clock; jwksUrl: string }): GooglePlay {
  const { clock } = deps;
  const jwks = createRemoteJWKSet(new URL(deps.jwksUrl));
  let cached: { token: string; expiresAt: number } | null = null;
  let pending: Promise<string> | null = null;

  /** OAuth 2.0 JWT-bearer grant (RFC 7523) with the service account's key, cached until near expiry. */
  async function accessToken(): Promise<string> {
    const sa = c.serviceAccount;
    if (!sa) throw invalidReceipt('No Google Play service account is configured on this server to verify against', 'store_not_configured');
    if (cached && cached.expiresAt - TOKEN_MARGIN_MS > clock.now().getTime()) return cached.token;
    // Concurrent requests share one exchange instead of each asking Google.
    pending ??= (async () => {
      try {
        const key = await importPKCS8(sa.privateKey, 'RS256');
        const now = Math.floor(clock.now().getTime() / 1000);
        const assertion = await new SignJWT({ scope: SCOPE })
          .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
          .setIssuer(sa.clientEmail)
          .setAudience(c.tokenUrl)
          .setIssuedAt(now)
          .setExpirationTime(now + 3600)
          .sign(key);
        // The signal bounds the answer's body too: a Google that stops mid-answer is unavailable.
        const res = await fetch(c.tokenUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }),
          signal: AbortSignal.timeout(c.timeoutMs),
        }).catch(() => null);
        if (!res?.ok) throw storeUnavailable('Google Play');
        const body = z.object({ access_token: z.string().min(1), expires_in: z.number().positive() }).safeParse(await res.json().catch(() => null));
        if (!body.success) throw storeUnavailable('Google Play');
        cached = { token: body.data.access_token, expiresAt: clock.now().getTime() + body.data.expires_in * 1000 };
        return body.data.access_token;
      } finally {
        pending = null;
      }
    })();
    return pending;
  }

  const base = `${c.apiUrl}/androidpublisher/v3/applications/${encodeURIComponent(c.packageName)}/purchases`;

  async function call(url: string, init: RequestInit = {}): Promise<Response> {
    const token = await accessToken();
    const res = await fetch(url, {
      ...init,
      headers: { ...init.headers, authorization: `Bearer ${token}`, accept: 'application/json' },
      signal: AbortSignal.timeout(c.timeoutMs),
    }).catch(() => null);
    if (!res) throw storeUnavailable('Google Play');
    // Our token was refused (revoked key, clock): forget it so the next request exchanges anew.
    if (res.status === 401) cached = null;
    return res;
  }

  return {
    async subscription(purchaseToken, opts = {}) {
      const res = await call(`${base}/subscriptionsv2/tokens/${encodeURIComponent(purchaseToken)}`);
      // 400 invalid token, 404 unknown, 410 purchased long ago and gone.
      if (res.status === 400 || res.status === 404 || res.status === 410) throw invalidReceipt('Google Play does not know this purchase token');
      if (!res.ok) throw storeUnavailable('Google Play');
      const parsed = subscriptionPurchaseV2.safeParse(await res.json().catch(() => null));
      if (!parsed.success) throw storeUnavailable('Google Play');
      const p = parsed.data;
      const now = clock.now();
      const expiry = Math.max(...p.lineItems.map((l) => (l.expiryTime ? Date.parse(l.expiryTime) : 0)));
      const entitled = ENTITLED.has(p.subscriptionState) && expiry > now.getTime();
      const line = p.lineItems[0];
      return {
        platform: 'google',
        storeKey: purchaseToken,
        productId: line?.productId ?? '',
        environment: p.testPurchase ? 'test' : 'production',
        // On hold, paused, pending or expired: no access from now, whatever expiryTime says.
        expiresAt: new Date(entitled ? expiry : Math.min(expiry || now.getTime(), now.getTime())),
        revokedAt: opts.revoked ? now : null,
        stateAt: now,
        acknowledged: p.acknowledgementState === 'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED',
      };
    },

    async acknowledge(productId, purchaseToken) {
      const res = await call(`${base}/subscriptions/${encodeURIComponent(productId)}/tokens/${encodeURIComponent(purchaseToken)}:acknowledge`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      if (!res.ok) throw storeUnavailable('Google Play');
    },

    async notification(authorization, body) {
      if (!c.pushAudience) throw invalidReceipt('No Pub/Sub push audience (GOOGLE_PUBSUB_AUDIENCE) is configured on this server', 'store_not_configured');
      const token = /^Bearer (\S+)$/i.exec(authorization ?? '')?.[1];
      if (!token) throw new Unauthorized('The push carries no OIDC token', 'invalid_notification');
      try {
        const { payload } = await jwtVerify(token, jwks, {
          issuer: ['https://accounts.google.com', 'accounts.google.com'],
          audience: c.pushAudience,
          currentDate: clock.now(),
        });
        if (c.pushServiceAccount && (payload.email !== c.pushServiceAccount || payload.email_verified !== true)) {
          throw new Error('push from another service account');
        }
      } catch {
        throw new Unauthorized('The push is not signed by Google for this audience', 'invalid_notification');
      }
      let decoded: unknown = null;
      try {
        decoded = JSON.parse(Buffer.from(body.message.data, 'base64').toString('utf8'));
      } catch {
        // left null: refused below
      }
      const n = developerNotification.safeParse(decoded);
      if (!n.success) throw invalidReceipt('The push message is not a developer notification', 'invalid_notification');
      const sub = n.data.subscriptionNotification;
      const ours = n.data.packageName === c.packageName;
      return {
        notificationId: body.message.messageId,
        kind: sub ? `subscription:${sub.notificationType}` : n.data.testNotification ? 'test' : 'other',
        purchaseToken: ours && sub ? sub.purchaseToken : null,
        revoked: sub ? REVOKED_TYPES.has(sub.notificationType) : false,
      };
    },
  };
}
