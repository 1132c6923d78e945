import { index, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { users } from './accounts.ts';
import { createdAt, ts, updatedAt } from './columns.ts';

/**
 * A store subscription bound to one clinician. `store_key` is what identifies the purchase at
 * its store across renewals — Apple's original transaction id, Google's purchase token — and
 * is unique per platform: a purchase can never grant two accounts, and the same receipt sent
 * twice (or twenty times at once) is refused by this index.
 */
export const storePurchases = pgTable(
  'store_purchases',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    platform: text('platform').notNull(),
    storeKey: text('store_key').notNull(),
    productId: text('product_id').notNull(),
    /** App Store or Google Play environment (Production, Sandbox; Google: production or test). */
    environment: text('environment').notNull(),
    expiresAt: ts('expires_at').notNull(),
    /** Refunded or revoked by the store: grants nothing from then on. */
    revokedAt: ts('revoked_at'),
    /** When the store signed (Apple) or we fetched (Google) the state stored here; older news is ignored. */
    storeStateAt: ts('store_state_at').notNull(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex('store_purchases_store_key').on(t.platform, t.storeKey), index('store_purchases_user_idx').on(t.userId)],
);

/**
 * Server-to-server notifications already applied (Apple's notificationUUID, Pub/Sub's
 * messageId): stores deliver at least once, and a repeat must change nothing.
 */
export const storeNotifications = pgTable(
  'store_notifications',
  {
    platform: text('platform').notNull(),
    notificationId: text('notification_id').notNull(),
    kind: text('kind').notNull(),
    receivedAt: ts('received_at').notNull().defaultNow(),
  },
  (t) => [uniqueIndex('store_notifications_key').on(t.platform, t.notificationId)],
);
