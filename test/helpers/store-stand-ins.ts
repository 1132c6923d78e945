/**
 * Local stand-ins for the two stores, speaking their real protocols on 127.0.0.1:
 *
 * - Apple: a certificate chain made here (root CA → intermediate with Apple's WWDR marker
 *   extension → leaf with the App Store receipt-signing marker), JWS signed ES256 by the leaf
 *   with the chain in `x5c` as the App Store does, and an App Store Server API that checks the
 *   ES256 bearer token of the app's API key and answers `GET /inApps/v1/transactions/{id}`.
 * - Google: a service-account token endpoint (RFC 7523 JWT-bearer grant, the assertion
 *   verified with the service account's public key), the Android Publisher
 *   `purchases.subscriptionsv2.get` and `purchases.subscriptions.acknowledge`, and Pub/Sub
 *   push bodies (the push's OIDC token comes from id-provider.ts, Google's JWKS stand-in).
 *
 * The server under test uses its real code against them: the Apple library's client and
 * SignedDataVerifier (with this root configured as trusted), fetch + jose for Google.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { randomUUID, webcrypto } from 'node:crypto';
import type { AddressInfo } from 'node:net';
// @peculiar/x509 resolves its algorithms through tsyringe, which needs the Reflect metadata API first.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';
import { CompactSign, exportPKCS8, exportSPKI, generateKeyPair, importSPKI, jwtVerify, SignJWT, type CryptoKey } from 'jose';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const EC = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DER_NULL = new Uint8Array([0x05, 0x00]);
const DAY = 86_400_000;

export const BUNDLE_ID = 'com.fieldchart.test';
export const PACKAGE_NAME = 'com.fieldchart.android.test';
export const APP_APPLE_ID = 1234567890;

/** A store's HTTP server; `stall(true)` makes it take requests and never answer (until closed). */
async function listen(handler: http.RequestListener): Promise<{ url: string; stall(on: boolean): void; close(): Promise<void> }> {
  let stalled = false;
  const server = http.createServer((req, res) => {
    if (!stalled) return handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stall: (on) => void (stalled = on),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function json(res: http.ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

// ---- Apple -----------------------------------------------------------------------------

export interface AppleChain {
  /** Directory holding the root certificate, for APPLE_ROOT_CERTS_DIR. */
  readonly rootsDir: string;
  /** Signs a JWS the way the App Store does (ES256, x5c = leaf, intermediate, root). */
  sign(payload: object): Promise<string>;
}

/** A root CA, an intermediate and a leaf carrying the marker extensions Apple's verifier requires. */
export async function createAppleChain(): Promise<AppleChain> {
  const keys = async () => (await webcrypto.subtle.generateKey(EC, true, ['sign', 'verify'])) as unknown as CryptoKeyPair;
  const [rootKeys, interKeys, leafKeys] = await Promise.all([keys(), keys(), keys()]);
  const notBefore = new Date(Date.now() - DAY);
  const notAfter = new Date(Date.now() + 3650 * DAY);
  const rootName = 'CN=Fieldchart Test Root CA, O=Fieldchart Test, C=US';
  const interName = 'CN=Fieldchart Test WWDR Intermediate, O=Fieldchart Test, C=US';
  const root = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: '01',
    name: rootName,
    notBefore,
    notAfter,
    keys: rootKeys,
    signingAlgorithm: EC,
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true)],
  });
  const intermediate = await x509.X509CertificateGenerator.create({
    serialNumber: '02',
    subject: interName,
    issuer: rootName,
    notBefore,
    notAfter,
    publicKey: interKeys.publicKey,
    signingKey: rootKeys.privateKey,
    signingAlgorithm: EC,
    extensions: [new x509.BasicConstraintsExtension(true, 0, true), new x509.Extension('1.2.840.113635.100.6.2.1', false, DER_NULL)],
  });
  const leaf = await x509.X509CertificateGenerator.create({
    serialNumber: '03',
    subject: 'CN=Fieldchart Test App Store Signing, O=Fieldchart Test, C=US',
    issuer: interName,
    notBefore,
    notAfter,
    publicKey: leafKeys.publicKey,
    signingKey: interKeys.privateKey,
    signingAlgorithm: EC,
    extensions: [new x509.BasicConstraintsExtension(false), new x509.Extension('1.2.840.113635.100.6.11.1', false, DER_NULL)],
  });
  const rootsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-apple-roots-'));
  fs.writeFileSync(path.join(rootsDir, 'test-root.cer'), Buffer.from(root.rawData));
  const x5c = [leaf, intermediate, root].map((c) => Buffer.from(c.rawData).toString('base64'));
  return {
    rootsDir,
    sign: (payload) =>
      new CompactSign(new TextEncoder().encode(JSON.stringify(payload)))
        .setProtectedHeader({ alg: 'ES256', x5c })
        .sign(leafKeys.privateKey as unknown as CryptoKey),
  };
}

export interface AppleTransaction {
  transactionId: string;
  originalTransactionId: string;
  productId: string;
  expiresDate: number;
  revocationDate?: number;
  bundleId?: string;
  environment?: string;
}

/** A JWSTransactionDecodedPayload as the App Store signs it. */
export function transactionPayload(t: AppleTransaction, signedDate = Date.now()) {
  return {
    transactionId: t.transactionId,
    originalTransactionId: t.originalTransactionId,
    webOrderLineItemId: `${t.originalTransactionId}-wol`,
    bundleId: t.bundleId ?? BUNDLE_ID,
    productId: t.productId,
    subscriptionGroupIdentifier: '21000000',
    purchaseDate: t.expiresDate - 30 * DAY,
    originalPurchaseDate: t.expiresDate - 30 * DAY,
    expiresDate: t.expiresDate,
    quantity: 1,
    type: 'Auto-Renewable Subscription',
    inAppOwnershipType: 'PURCHASED',
    signedDate,
    environment: t.environment ?? 'Sandbox',
    transactionReason: 'PURCHASE',
    storefront: 'USA',
    storefrontId: '143441',
    price: 19990,
    currency: 'USD',
    ...(t.revocationDate !== undefined ? { revocationDate: t.revocationDate, revocationReason: 0 } : {}),
  };
}

export interface AppleStandIn {
  readonly url: string;
  readonly chain: AppleChain;
  /** Environment for the server under test. */
  readonly env: Record<string, string>;
  /** What `GET /inApps/v1/transactions/{id}` answers for an id (signed with `signer`, default the trusted chain). */
  setTransaction(t: AppleTransaction, opts?: { signer?: AppleChain }): Promise<void>;
  /** A signed App Store Server Notification v2 about `t`. */
  notification(type: string, t: AppleTransaction, opts?: { uuid?: string; signedDate?: number; signer?: AppleChain; subtype?: string }): Promise<string>;
  /** Transaction lookups answered (authorised ones only). */
  lookups(): number;
  /** While on, requests are taken and never answered (a stalled App Store). */
  stall(on: boolean): void;
  close(): Promise<void>;
}

export async function startAppleStandIn(): Promise<AppleStandIn> {
  const chain = await createAppleChain();
  const apiKeys = await generateKeyPair('ES256', { extractable: true });
  const issuerId = randomUUID();
  const keyId = 'TESTKEY123';
  const transactions = new Map<string, string>();
  let lookups = 0;
  const server = await listen(async (req, res) => {
    const m = /^\/inApps\/v1\/transactions\/([^/?]+)/.exec(req.url ?? '');
    if (req.method !== 'GET' || !m?.[1]) return json(res, 404, { errorCode: 4040000, errorMessage: 'not found' });
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
    try {
      const { payload, protectedHeader } = await jwtVerify(token, apiKeys.publicKey, { issuer: issuerId, audience: 'appstoreconnect-v1' });
      if (protectedHeader.kid !== keyId || payload.bid !== BUNDLE_ID) throw new Error('wrong key or bundle');
    } catch {
      res.writeHead(401);
      return res.end();
    }
    lookups++;
    const signed = transactions.get(decodeURIComponent(m[1]));
    if (!signed) return json(res, 404, { errorCode: 4040010, errorMessage: 'Transaction id not found.' });
    json(res, 200, { signedTransactionInfo: signed });
  });
  return {
    url: server.url,
    chain,
    env: {
      APPLE_IAP_ISSUER_ID: issuerId,
      APPLE_IAP_KEY_ID: keyId,
      APPLE_IAP_PRIVATE_KEY: await exportPKCS8(apiKeys.privateKey),
      APPLE_BUNDLE_ID: BUNDLE_ID,
      APPLE_APP_APPLE_ID: String(APP_APPLE_ID),
      APPLE_IAP_ENVIRONMENT: 'Sandbox',
      APPLE_IAP_API_URL: server.url,
      APPLE_ROOT_CERTS_DIR: chain.rootsDir,
      APPLE_IAP_ONLINE_CHECKS: 'false',
    },
    async setTransaction(t, opts = {}) {
      transactions.set(t.transactionId, await (opts.signer ?? chain).sign(transactionPayload(t)));
    },
    async notification(type, t, opts = {}) {
      const signer = opts.signer ?? chain;
      const signedDate = opts.signedDate ?? Date.now();
      return signer.sign({
        notificationType: type,
        ...(opts.subtype ? { subtype: opts.subtype } : {}),
        notificationUUID: opts.uuid ?? randomUUID(),
        data: {
          appAppleId: APP_APPLE_ID,
          bundleId: BUNDLE_ID,
          bundleVersion: '1.0',
          environment: 'Sandbox',
          signedTransactionInfo: await signer.sign(transactionPayload(t, signedDate)),
          status: t.revocationDate !== undefined ? 5 : t.expiresDate > Date.now() ? 1 : 2,
        },
        version: '2.0',
        signedDate,
      });
    },
    lookups: () => lookups,
    stall: server.stall,
    async close() {
      await server.close();
      fs.rmSync(chain.rootsDir, { recursive: true, force: true });
    },
  };
}

// ---- Google ----------------------------------------------------------------------------

export interface GoogleSubscription {
  productId: string;
  expiryTime: Date;
  state?: string;
  acknowledged?: boolean;
  test?: boolean;
}

export interface GoogleStandIn {
  readonly url: string;
  /** Environment for the server under test (add GOOGLE_JWKS_URL and GOOGLE_PUBSUB_AUDIENCE for pushes). */
  readonly env: Record<string, string>;
  setSubscription(purchaseToken: string, s: GoogleSubscription): void;
  /** Acknowledge calls received, as `productId/token`. */
  readonly acknowledged: string[];
  /** Token exchanges answered. */
  tokenExchanges(): number;
  /** subscriptionsv2.get calls answered. */
  lookups(): number;
  /** While on, requests (token exchanges too) are taken and never answered (a stalled Google). */
  stall(on: boolean): void;
  /** A Pub/Sub push body carrying a developer notification. */
  push(n: { purchaseToken: string; notificationType: number; messageId?: string; packageName?: string }): { message: { data: string; messageId: string; publishTime: string }; subscription: string };
  close(): Promise<void>;
}

export async function startGoogleStandIn(): Promise<GoogleStandIn> {
  const saKeys = await generateKeyPair('RS256', { extractable: true });
  const saPublic = await importSPKI(await exportSPKI(saKeys.publicKey), 'RS256');
  const clientEmail = 'play-verifier@fieldchart-test.iam.gserviceaccount.com';
  const subscriptions = new Map<string, GoogleSubscription>();
  const issued = new Set<string>();
  const acknowledged: string[] = [];
  let exchanges = 0;
  let lookups = 0;
  let tokenUrl = '';
  const base = `/androidpublisher/v3/applications/${PACKAGE_NAME}/purchases`;
  const server = await listen(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method === 'POST' && url.pathname === '/token') {
      const form = new URLSearchParams(await readBody(req));
      try {
        if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') throw new Error('grant');
        const { payload } = await jwtVerify(form.get('assertion') ?? '', saPublic, { issuer: clientEmail, audience: tokenUrl });
        if (payload.scope !== 'https://www.googleapis.com/auth/androidpublisher') throw new Error('scope');
      } catch {
        return json(res, 400, { error: 'invalid_grant' });
      }
      exchanges++;
      const token = `ya29.test-${randomUUID()}`;
      issued.add(token);
      return json(res, 200, { access_token: token, expires_in: 3599, token_type: 'Bearer' });
    }
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!bearer || !issued.has(bearer)) return json(res, 401, { error: { code: 401, message: 'Request had invalid authentication credentials.' } });
    const get = new RegExp(`^${base}/subscriptionsv2/tokens/([^/]+)$`).exec(url.pathname);
    if (req.method === 'GET' && get?.[1]) {
      const token = decodeURIComponent(get[1]);
      const s = subscriptions.get(token);
      if (!s) return json(res, 400, { error: { code: 400, message: 'Invalid Value' } });
      lookups++;
      return json(res, 200, {
        kind: 'androidpublisher#subscriptionPurchaseV2',
        regionCode: 'US',
        startTime: new Date(s.expiryTime.getTime() - 30 * DAY).toISOString(),
        subscriptionState: s.state ?? 'SUBSCRIPTION_STATE_ACTIVE',
        latestOrderId: `GPA.${token.slice(0, 8)}`,
        acknowledgementState: s.acknowledged ? 'ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED' : 'ACKNOWLEDGEMENT_STATE_PENDING',
        ...(s.test ? { testPurchase: {} } : {}),
        lineItems: [{ productId: s.productId, expiryTime: s.expiryTime.toISOString(), autoRenewingPlan: { autoRenewEnabled: true } }],
      });
    }
    const ack = new RegExp(`^${base}/subscriptions/([^/]+)/tokens/([^/:]+):acknowledge$`).exec(url.pathname);
    if (req.method === 'POST' && ack?.[1] && ack[2]) {
      const productId = decodeURIComponent(ack[1]);
      const token = decodeURIComponent(ack[2]);
      const s = subscriptions.get(token);
      if (!s || s.productId !== productId) return json(res, 400, { error: { code: 400, message: 'Invalid Value' } });
      s.acknowledged = true;
      acknowledged.push(`${productId}/${token}`);
      res.writeHead(204);
      return res.end();
    }
    json(res, 404, { error: { code: 404, message: 'Not found' } });
  });
  tokenUrl = `${server.url}/token`;
  return {
    url: server.url,
    env: {
      GOOGLE_PLAY_SERVICE_ACCOUNT_JSON: JSON.stringify({
        type: 'service_account',
        client_email: clientEmail,
        private_key: await exportPKCS8(saKeys.privateKey),
        token_uri: tokenUrl,
      }),
      GOOGLE_PLAY_PACKAGE_NAME: PACKAGE_NAME,
      GOOGLE_PLAY_API_URL: server.url,
    },
    setSubscription: (token, s) => void subscriptions.set(token, { ...s }),
    acknowledged,
    tokenExchanges: () => exchanges,
    lookups: () => lookups,
    stall: server.stall,
    push(n) {
      const data = {
        version: '1.0',
        packageName: n.packageName ?? PACKAGE_NAME,
        eventTimeMillis: String(Date.now()),
        subscriptionNotification: { version: '1.0', notificationType: n.notificationType, purchaseToken: n.purchaseToken, subscriptionId: 'service_monthly' },
      };
      return {
        message: { data: Buffer.from(JSON.stringify(data)).toString('base64'), messageId: n.messageId ?? randomUUID(), publishTime: new Date().toISOString() },
        subscription: 'projects/fieldchart-test/subscriptions/play-rtdn',
      };
    },
    close: () => server.close(),
  };
}
