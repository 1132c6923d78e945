/** The caller's subscription: its status, and store purchases verified by the server. */
import type * as z from 'zod';
import type { subscriptionState, verifyReceiptBody } from '@fieldchart/schema/api';
import { ENDPOINTS as E } from '../endpoints.ts';
import type { Invoker } from '../invoke.ts';
import type { AuthWriteOptions, MessageResult, ReadOptions } from '../options.ts';

/** `subscription_status` (trial, active, expired, org_managed) with the trial's and the purchase's end. */
export type SubscriptionState = z.output<typeof subscriptionState>;
/** Body of `POST /subscription/verify-receipt`: `transaction_id` for apple, `purchase_token` for google. */
export type VerifyReceiptBody = z.input<typeof verifyReceiptBody>;

/** `client.subscription`. */
export interface SubscriptionApi {
  /** `GET /subscription/status`. */
  status(options?: ReadOptions): Promise<SubscriptionState>;
  /**
   * `POST /subscription/verify-receipt`: the server asks the store that sold the purchase and
   * binds it to the caller. 422 invalid receipt, wrong product or no store configured; 409
   * already processed (by anyone); 503 the store could not be reached (retry).
   */
  verifyReceipt(body: VerifyReceiptBody, options?: AuthWriteOptions): Promise<MessageResult>;
}

export function subscriptionApi(call: Invoker): SubscriptionApi {
  return {
    status: (o) => call.data(E['subscription.status'], {}, o),
    verifyReceipt: (body, o) => call.message(E['subscription.verifyReceipt'], { body }, o),
  };
}
