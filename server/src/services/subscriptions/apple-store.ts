import fs from 'node:fs';
import path from 'node:path';
import { X509Certificate } from 'node:crypto';
import {
  APIException,
  AppStoreServerAPIClient,
  Environment,
  SignedDataVerifier,
  VerificationException,
  type JWSTransactionDecodedPayload,
  type ResponseBodyV2DecodedPayload,
} from '@apple/app-store-server-library';
import type { AppleIapConfig } from '../../config.ts';
import { APPLE_ROOT_CA_G3_BASE64 } from './apple-root-ca-g3.ts';
import { invalidReceipt, storeUnavailable, type StoreSubscription } from './store-subscription.ts';
import { Unauthorized } from '../../errors.ts';

/**
 * The library's client with two changes: each request has a deadline (STORE_TIMEOUT_MS; the
 * library's own fetch has none, so a stalled App Store held the clinician's request for
 * minutes), and with APPLE_IAP_API_URL set, requests go there instead of Apple's host for the
 * environment (the library fixes the host and has no option for it). Authentication, paths and
 * response validation stay the library's.
 */
class AppStoreServerApi extends AppStoreServerAPIClient {
  readonly #baseUrl: string;
  readonly #timeoutMs: number;
  constructor(c: AppleIapConfig, api: NonNullable<AppleIapConfig['api']>) {
    super(api.privateKey, api.keyId, api.issuerId, c.bundleId, c.environment === 'Sandbox' ? Environment.SANDBOX : Environment.PRODUCTION);
    this.#baseUrl = c.apiUrl ?? (c.environment === 'Sandbox' ? APPLE_SANDBOX_URL : APPLE_PRODUCTION_URL);
    this.#timeoutMs = c.timeoutMs;
  }
  protected override async makeFetchRequest(
    pathname: string,
    query: URLSearchParams,
    method: string,
    body: string | Buffer | undefined,
    headers: { [key: string]: string },
  ) {
    // The library reads only ok, status and json() of the answer, which both fetches share; the
    // signal bounds reading the body too.
    return (await fetch(`${this.#baseUrl}${pathname}?${query}`, {
      method,
      headers,
      signal: AbortSignal.timeout(this.#timeoutMs),
      ...(body !== undefined ? { body: typeof body === 'string' ? body : new Uint8Array(body) } : {}),
    })) as never;
  }
}

/** The App Store Server API's hosts (the library's, which it keeps private). */
const APPLE_PRODUCTION_URL = 'https://api.storekit.apple.com';
const APPLE_SANDBOX_URL = 'https://api.storekit-sandbox.apple.com';

/** Trusted roots: every certificate file in APPLE_ROOT_CERTS_DIR (DER or PEM), else Apple Root CA - G3. */
export function loadAppleRoots(dir: string | null): Buffer[] {
  if (dir === null) return [Buffer.from(APPLE_ROOT_CA_G3_BASE64, 'base64')];
  const roots = fs
    .readdirSync(dir)
    .filter((f) => /\.(cer|der|crt|pem)$/i.test(f))
    .sort()
    .map((f) => new X509Certificate(fs.readFileSync(path.join(dir, f))).raw);
  if (roots.length === 0) throw new Error(`APPLE_ROOT_CERTS_DIR ${dir} holds no .cer, .der, .crt or .pem certificate`);
  return roots;
}

export interface AppleNotification {
  readonly notificationId: string;
  readonly type: string;
  /** The transaction the notification is about, verified; absent for TEST and summary notifications. */
  readonly subscription: StoreSubscription | null;
}

export interface AppleStore {
  /** Fetches the transaction from the App Store Server API and verifies its signed JWS. */
  transaction(transactionId: string): Promise<StoreSubscription>;
  /** Verifies an App Store Server Notification v2 and the transaction it carries. */
  notification(signedPayload: string): Promise<AppleNotification>;
}

export function createAppleStore(c: AppleIapConfig): AppleStore {
  const environment = c.environment === 'Sandbox' ? Environment.SANDBOX : Environment.PRODUCTION;
  const verifier = new SignedDataVerifier(loadAppleRoots(c.rootCertsDir), c.onlineChecks, environment, c.bundleId, c.appAppleId ?? undefined);
  const api = c.api ? new AppStoreServerApi(c, c.api) : null;

  function subscriptionOf(t: JWSTransactionDecodedPayload): StoreSubscription {
    if (!t.originalTransactionId || !t.productId || t.expiresDate === undefined) {
      throw invalidReceipt('The transaction is not an auto-renewable subscription', 'not_a_subscription');
    }
    return {
      platform: 'apple',
      storeKey: t.originalTransactionId,
      productId: t.productId,
      environment: String(t.environment ?? c.environment),
      expiresAt: new Date(t.expiresDate),
      revokedAt: t.revocationDate !== undefined ? new Date(t.revocationDate) : null,
      stateAt: new Date(t.signedDate ?? Date.now()),
    };
  }

  async function verifiedTransaction(signed: string): Promise<JWSTransactionDecodedPayload> {
    try {
      return await verifier.verifyAndDecodeTransaction(signed);
    } catch (err) {
      if (err instanceof VerificationException) throw invalidReceipt('The App Store signature of the transaction could not be verified');
      throw err;
    }
  }

  return {
    async transaction(transactionId) {
      if (!api) throw invalidReceipt('No App Store Server API credentials are configured on this server to verify against', 'store_not_configured');
      let signed: string | undefined;
      try {
        signed = (await api.getTransactionInfo(transactionId)).signedTransactionInfo;
      } catch (err) {
        // 4040010 TransactionIdNotFoundError, 4000006 InvalidTransactionIdError: the id is not a purchase of this app.
        if (err instanceof APIException && (err.httpStatusCode === 404 || err.httpStatusCode === 400)) {
          throw invalidReceipt('The App Store does not know this transaction');
        }
        throw storeUnavailable('App Store');
      }
      if (!signed) throw invalidReceipt('The App Store answered no transaction');
      return subscriptionOf(await verifiedTransaction(signed));
    },

    async notification(signedPayload) {
      let n: ResponseBodyV2DecodedPayload;
      try {
        n = await verifier.verifyAndDecodeNotification(signedPayload);
      } catch (err) {
        if (err instanceof VerificationException) throw new Unauthorized('The notification is not signed by the App Store for this app', 'invalid_notification');
        throw err;
      }
      if (!n.notificationUUID) throw new Unauthorized('The notification has no notificationUUID', 'invalid_notification');
      const signed = n.data?.signedTransactionInfo;
      let subscription: StoreSubscription | null = null;
      if (signed) {
        try {
          subscription = subscriptionOf(await verifier.verifyAndDecodeTransaction(signed));
        } catch (err) {
          if (err instanceof VerificationException) throw new Unauthorized('The transaction in the notification is not signed by the App Store', 'invalid_notification');
          // Not a subscription (a consumable, say): nothing of ours to update.
          if (!(err instanceof Error && 'code' in err && err.code === 'not_a_subscription')) throw err;
        }
      }
      return { notificationId: n.notificationUUID, type: String(n.notificationType ?? 'UNKNOWN'), subscription };
    },
  };
}
