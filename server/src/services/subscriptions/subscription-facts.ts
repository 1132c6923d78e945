import { and, desc, eq, inArray, isNull } from 'drizzle-orm';
import { organizationMembers, storePurchases } from '@fieldchart/schema/db';
import { subscriptionStatusOf, type StorePlatform, type SubscriptionProduct, type SubscriptionState } from '@fieldchart/schema/api';
import type { Db } from '../../db/database.ts';

/** The purchase that counts: not revoked, running longest (its expiry may be past). */
async function currentPurchase(db: Db, userId: string) {
  const [p] = await db
    .select({ expiresAt: storePurchases.expiresAt, productId: storePurchases.productId, platform: storePurchases.platform })
    .from(storePurchases)
    .where(and(eq(storePurchases.userId, userId), isNull(storePurchases.revokedAt)))
    .orderBy(desc(storePurchases.expiresAt))
    .limit(1);
  return p ?? null;
}

/**
 * Reads the facts of `subscriptionStatusOf` for one user and answers the whole subscription
 * state (GET /subscription/status); loginData and the profile take its status. Pass the
 * caller's transaction to see its own writes (leaving an organization).
 */
export async function readSubscription(db: Db, user: { id: string; trialEndsAt: Date | null }, now: Date): Promise<SubscriptionState> {
  const [[seat], purchase] = await Promise.all([
    db.select({ userId: organizationMembers.userId }).from(organizationMembers).where(eq(organizationMembers.userId, user.id)),
    currentPurchase(db, user.id),
  ]);
  return {
    subscription_status: subscriptionStatusOf({ trialEndsAt: user.trialEndsAt, purchase, seated: seat !== undefined, now }),
    trial_ends_at: user.trialEndsAt?.toISOString() ?? null,
    expires_at: purchase?.expiresAt.toISOString() ?? null,
    product_id: (purchase?.productId as SubscriptionProduct | undefined) ?? null,
    platform: (purchase?.platform as StorePlatform | undefined) ?? null,
  };
}

/** The status of many users at once (operator listings): two queries, whatever the count. */
export async function readSubscriptionStatuses(
  db: Db,
  list: ReadonlyArray<{ id: string; trialEndsAt: Date | null }>,
  now: Date,
): Promise<Map<string, SubscriptionState['subscription_status']>> {
  const ids = list.map((u) => u.id);
  if (ids.length === 0) return new Map();
  const [seats, purchases] = await Promise.all([
    db.select({ userId: organizationMembers.userId }).from(organizationMembers).where(inArray(organizationMembers.userId, ids)),
    db
      .select({ userId: storePurchases.userId, expiresAt: storePurchases.expiresAt })
      .from(storePurchases)
      .where(and(inArray(storePurchases.userId, ids), isNull(storePurchases.revokedAt))),
  ]);
  const seated = new Set(seats.map((s) => s.userId));
  const latest = new Map<string, Date>();
  for (const p of purchases) {
    const seen = latest.get(p.userId);
    if (!seen || p.expiresAt > seen) latest.set(p.userId, p.expiresAt);
  }
  return new Map(
    list.map((u) => {
      const expiresAt = latest.get(u.id);
      return [u.id, subscriptionStatusOf({ trialEndsAt: u.trialEndsAt, purchase: expiresAt ? { expiresAt } : null, seated: seated.has(u.id), now })];
    }),
  );
}
