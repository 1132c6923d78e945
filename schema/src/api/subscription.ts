import * as z from 'zod';
import { isoDateTime, text } from './common.ts';
import { subscriptionStatus, type SUBSCRIPTION_STATUSES } from './accounts.ts';

export type SubscriptionStatus = (typeof SUBSCRIPTION_STATUSES)[number];

export const SUBSCRIPTION_PRODUCTS = ['service_monthly', 'service_annual'] as const;
export type SubscriptionProduct = (typeof SUBSCRIPTION_PRODUCTS)[number];
export const STORE_PLATFORMS = ['apple', 'google'] as const;
export type StorePlatform = (typeof STORE_PLATFORMS)[number];

/** What decides a clinician's subscription status: nothing else is consulted. */
export interface SubscriptionFacts {
  /** End of the registration trial (null: never had one). */
  readonly trialEndsAt: Date | null;
  /**
   * The purchase that runs longest among the ones not refunded or revoked (null: none).
   * An expiry in the past still counts as the last purchase, for `expires_at`.
   */
  readonly purchase: { readonly expiresAt: Date } | null;
  /** The clinician holds an organization seat: the organization pays. */
  readonly seated: boolean;
  readonly now: Date;
}

/**
 * The one rule for `subscription_status`, used by sign-in's loginData, the profile,
 * GET /subscription/status, leaving an organization and the operator CLI, so they cannot
 * disagree. A seat wins (the organization pays); then a running purchase; then a running
 * trial; otherwise expired. Leaving an organization therefore lands on trial, active or
 * expired by the same rule, and a trial or purchase ends without any write.
 */
export function subscriptionStatusOf(f: SubscriptionFacts): SubscriptionStatus {
  if (f.seated) return 'org_managed';
  const t = f.now.getTime();
  if (f.purchase && f.purchase.expiresAt.getTime() > t) return 'active';
  if (f.trialEndsAt && f.trialEndsAt.getTime() > t) return 'trial';
  return 'expired';
}

export const subscriptionProduct = z.enum(SUBSCRIPTION_PRODUCTS, { error: `must be one of ${SUBSCRIPTION_PRODUCTS.join(', ')}` });
export const storePlatform = z.enum(STORE_PLATFORMS, { error: `must be one of ${STORE_PLATFORMS.join(', ')}` });

export const subscriptionState = z
  .object({
    subscription_status: subscriptionStatus,
    trial_ends_at: isoDateTime.nullable(),
    expires_at: isoDateTime.nullable().describe('End of the current (or last) store purchase'),
    product_id: subscriptionProduct.nullable(),
    platform: storePlatform.nullable(),
  })
  .meta({ id: 'Subscription' });
export type SubscriptionState = z.infer<typeof subscriptionState>;

const storeId = text(4096).min(1, 'is required');

export const verifyReceiptBody = z
  .object({
    product_id: subscriptionProduct,
    platform: storePlatform,
    transaction_id: storeId.optional().describe('App Store transaction id (platform apple)'),
    purchase_token: storeId.optional().describe('Google Play purchase token (platform google)'),
  })
  .superRefine((b, ctx) => {
    if (b.platform === 'apple' && !b.transaction_id) ctx.addIssue({ code: 'custom', path: ['transaction_id'], message: 'is required for platform apple' });
    if (b.platform === 'google' && !b.purchase_token) ctx.addIssue({ code: 'custom', path: ['purchase_token'], message: 'is required for platform google' });
  });
export type VerifyReceiptBody = z.infer<typeof verifyReceiptBody>;
