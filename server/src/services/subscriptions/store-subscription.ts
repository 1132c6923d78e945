import { Invalid, Unavailable } from '../../errors.ts';

/**
 * A store's view of one subscription, the same shape for both stores, as verified with the
 * store (never as the client claimed it).
 */
export interface StoreSubscription {
  readonly platform: 'apple' | 'google';
  /** Apple: original transaction id; Google: purchase token. The same across renewals. */
  readonly storeKey: string;
  readonly productId: string;
  readonly environment: string;
  /** End of the paid period; for a lapsed or on-hold subscription, no later than now. */
  readonly expiresAt: Date;
  /** Refunded or revoked by the store. */
  readonly revokedAt: Date | null;
  /** When the store stated this (Apple's signedDate, Google's fetch time): older news loses. */
  readonly stateAt: Date;
}

/** The receipt could not be verified or grants nothing: 422, nothing changes. */
export const invalidReceipt = (message: string, code = 'invalid_receipt') => new Invalid(message, { receipt: [message] }, code);

/** The store could not be asked (outage, our credentials refused): 503, the app retries. */
export const storeUnavailable = (store: 'App Store' | 'Google Play') =>
  new Unavailable(`The ${store} could not verify the purchase right now; try again shortly`, 'store_unavailable');
