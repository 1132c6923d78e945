import { and, eq, lte } from 'drizzle-orm';
import { storeNotifications, storePurchases } from '@fieldchart/schema/db';
import type { SubscriptionState, VerifyReceiptBody } from '@fieldchart/schema/api';
import { isUniqueViolation, type Db } from '../../db/database.ts';
import type { Clock } from '../../clock.ts';
import type { Config } from '../../config.ts';
import { Conflict, Invalid, NotFound } from '../../errors.ts';
import type { Principal } from '../auth/sessions.ts';
import { findUserById } from '../users/user-profile.ts';
import type { AppleStore } from './apple-store.ts';
import { createGooglePlay, type GooglePlay, type PubSubPush } from './google-play.ts';
import { readSubscription } from './subscription-facts.ts';
import { invalidReceipt, type StoreSubscription } from './store-subscription.ts';

export type NotificationOutcome = 'applied' | 'duplicate' | 'stale' | 'unknown_purchase' | 'ignored';

const notConfigured = (store: string) =>
  invalidReceipt(`${store} purchases cannot be verified: no ${store} account is configured on this server`, 'store_not_configured');

/**
 * Subscriptions: the status (GET /subscription/status), receipts verified with the store that
 * sold them (POST /subscription/verify-receipt), and the stores' server-to-server
 * notifications. Nothing is granted on the client's word: every state written here was
 * fetched from or signed by the store.
 */
export function createSubscriptions(deps: {
  db: Db;
  clock: Clock;
  config: Config;
  /** Injected by tests; built from config otherwise (null: that store is not configured). */
  apple?: AppleStore | null;
  google?: GooglePlay | null;
}) {
  const { db, clock, config } = deps;
  const apple = deps.apple !== undefined ? deps.apple : config.appleIap ? lazyAppleStore(config.appleIap) : null;
  const google =
    deps.google !== undefined ? deps.google : config.googlePlay ? createGooglePlay(config.googlePlay, { clock, jwksUrl: config.social.google.jwksUrl }) : null;

  /** Refuses what grants nothing: another product, a refund, a past period. */
  function mustGrant(s: StoreSubscription, productId: string): void {
    if (s.productId !== productId) throw invalidReceipt(`The purchase is for ${s.productId}, not ${productId}`, 'product_mismatch');
    if (s.revokedAt) throw invalidReceipt('The purchase was refunded or revoked', 'receipt_revoked');
    if (s.expiresAt.getTime() <= clock.now().getTime()) throw invalidReceipt('The subscription period has ended', 'receipt_expired');
  }

  /** Binds the purchase to the user; the unique (platform, store_key) index makes a second bind a 409. */
  async function bind(tx: Db, userId: string, s: StoreSubscription): Promise<void> {
    try {
      await tx.insert(storePurchases).values({
        userId,
        platform: s.platform,
        storeKey: s.storeKey,
        productId: s.productId,
        environment: s.environment,
        expiresAt: s.expiresAt,
        revokedAt: s.revokedAt,
        storeStateAt: s.stateAt,
        createdAt: clock.now(),
        updatedAt: clock.now(),
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw new Conflict('This purchase has already been processed', 'receipt_already_processed');
      throw err;
    }
  }

  /**
   * Applies a store's newer statement about a bound purchase, once per notification id: the
   * notification row and the update commit together, so a redelivery finds the row and
   * changes nothing, and a failed update leaves the store to deliver again.
   */
  async function applyNotification(
    platform: 'apple' | 'google',
    notificationId: string,
    kind: string,
    s: StoreSubscription | null,
    keepRevocation: boolean,
  ): Promise<NotificationOutcome> {
    return db.transaction(async (tx) => {
      const [fresh] = await tx
        .insert(storeNotifications)
        .values({ platform, notificationId, kind, receivedAt: clock.now() })
        .onConflictDoNothing()
        .returning({ id: storeNotifications.notificationId });
      if (!fresh) return 'duplicate';
      if (!s) return 'ignored';
      const [bound] = await tx
        .select({ id: storePurchases.id, revokedAt: storePurchases.revokedAt, stateAt: storePurchases.storeStateAt })
        .from(storePurchases)
        .where(and(eq(storePurchases.platform, platform), eq(storePurchases.storeKey, s.storeKey)))
        .for('update');
      // Not bound to anyone yet: the app's verify-receipt will fetch the current state itself.
      if (!bound) return 'unknown_purchase';
      if (bound.stateAt > s.stateAt) return 'stale';
      await tx
        .update(storePurchases)
        .set({
          productId: s.productId,
          expiresAt: s.expiresAt,
          // Google's subscription resource does not say "refunded"; once a revocation notice came, it stays.
          revokedAt: keepRevocation ? (bound.revokedAt ?? s.revokedAt) : s.revokedAt,
          storeStateAt: s.stateAt,
          updatedAt: clock.now(),
        })
        .where(and(eq(storePurchases.id, bound.id), lte(storePurchases.storeStateAt, s.stateAt)));
      return 'applied';
    });
  }

  async function status(principal: Principal): Promise<SubscriptionState> {
    const u = await findUserById(db, principal.userId);
    if (!u) throw new NotFound('User not found', 'user_not_found');
    return readSubscription(db, u, clock.now());
  }

  return {
    status,

    /** POST /subscription/verify-receipt: verified with the store, bound to the caller once. */
    async verifyReceipt(principal: Principal, body: VerifyReceiptBody): Promise<SubscriptionState> {
      if (body.platform === 'apple') {
        if (!apple) throw notConfigured('App Store');
        const s = await apple.transaction(body.transaction_id ?? '');
        mustGrant(s, body.product_id);
        await db.transaction((tx) => bind(tx, principal.userId, s));
      } else {
        if (!google) throw notConfigured('Google Play');
        const token = body.purchase_token ?? '';
        const s = await google.subscription(token);
        mustGrant(s, body.product_id);
        await db.transaction(async (tx) => {
          await bind(tx, principal.userId, s);
          // Inside the transaction: only the one request that bound the purchase acknowledges it,
          // and a failed acknowledgement undoes the grant (503; the app retries) rather than
          // leaving a grant that Google will refund in three days.
          if (!s.acknowledged) await google.acknowledge(s.productId, token);
        });
      }
      return status(principal);
    },

    /** App Store Server Notifications v2 (POST {signedPayload}). */
    async appleNotification(signedPayload: string): Promise<NotificationOutcome> {
      if (!apple) throw notConfigured('App Store');
      const n = await apple.notification(signedPayload);
      return applyNotification('apple', n.notificationId, n.type, n.subscription, false);
    },

    /** Google Play real-time developer notifications through a Pub/Sub push subscription. */
    async googleNotification(authorization: string | undefined, push: PubSubPush): Promise<NotificationOutcome> {
      if (!google) throw notConfigured('Google Play');
      const n = await google.notification(authorization, push);
      // The message only says "something changed": the state comes from the API. A token the
      // API does not know is recorded and ignored (Pub/Sub would otherwise redeliver it forever).
      let s: StoreSubscription | null = null;
      if (n.purchaseToken) {
        try {
          s = await google.subscription(n.purchaseToken, { revoked: n.revoked });
        } catch (err) {
          if (!(err instanceof Invalid)) throw err;
        }
      }
      return applyNotification('google', n.notificationId, n.kind, s, true);
    },
  };
}

export type Subscriptions = ReturnType<typeof createSubscriptions>;

/**
 * Apple's library (and its certificate stack) is loaded on the first App Store call, not at
 * boot: every process that builds the services — each CLI command too — would otherwise pay
 * for it, configured or not.
 */
function lazyAppleStore(c: NonNullable<Config['appleIap']>): AppleStore {
  let store: Promise<AppleStore> | null = null;
  const get = () => (store ??= import('./apple-store.ts').then((m) => m.createAppleStore(c)));
  return {
    transaction: async (transactionId) => (await get()).transaction(transactionId),
    notification: async (signedPayload) => (await get()).notification(signedPayload),
  };
}
