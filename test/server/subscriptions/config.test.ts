/** Store configuration: parsed once, refused with the variable's name when incomplete; the embedded Apple root. */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../../server/src/config.ts';
import { loadAppleRoots } from '../../../server/src/services/subscriptions/apple-store.ts';

const refused = (env: Record<string, string>, variable: RegExp) =>
  assert.throws(() => loadConfig(env), (err: Error) => err instanceof ConfigError && variable.test(err.message));

test('no store variables: both stores unconfigured', () => {
  const c = loadConfig({});
  assert.equal(c.appleIap, null);
  assert.equal(c.googlePlay, null);
});

test('incomplete or inconsistent store variables stop the process, naming the variable', () => {
  refused({ APPLE_IAP_ISSUER_ID: 'i', APPLE_BUNDLE_ID: 'b', APPLE_IAP_ENVIRONMENT: 'Sandbox' }, /APPLE_IAP_KEY_ID/);
  refused({ APPLE_IAP_ISSUER_ID: 'i', APPLE_IAP_KEY_ID: 'k', APPLE_IAP_PRIVATE_KEY: 'p' }, /APPLE_BUNDLE_ID/);
  refused({ APPLE_BUNDLE_ID: 'com.x' }, /APPLE_APP_APPLE_ID/);
  refused({ APPLE_BUNDLE_ID: 'com.x', APPLE_IAP_ENVIRONMENT: 'Test' }, /APPLE_IAP_ENVIRONMENT/);
  refused({ GOOGLE_PLAY_SERVICE_ACCOUNT_JSON: '{}' }, /GOOGLE_PLAY_PACKAGE_NAME/);
  refused({ GOOGLE_PLAY_SERVICE_ACCOUNT_JSON: 'not json', GOOGLE_PLAY_PACKAGE_NAME: 'com.x' }, /GOOGLE_PLAY_SERVICE_ACCOUNT_JSON/);
  refused({ GOOGLE_PLAY_SERVICE_ACCOUNT_JSON: '{"client_email":"a@b"}', GOOGLE_PLAY_PACKAGE_NAME: 'com.x' }, /GOOGLE_PLAY_SERVICE_ACCOUNT_JSON: private_key/);
});

test('a complete configuration: escaped newlines of the .p8 restored, the key file\'s token_uri used', () => {
  const c = loadConfig({
    APPLE_IAP_ISSUER_ID: 'issuer',
    APPLE_IAP_KEY_ID: 'KEY',
    APPLE_IAP_PRIVATE_KEY: '-----BEGIN PRIVATE KEY-----\\nabc\\n-----END PRIVATE KEY-----',
    APPLE_BUNDLE_ID: 'com.x',
    APPLE_APP_APPLE_ID: '42',
    GOOGLE_PLAY_PACKAGE_NAME: 'com.x.android',
    GOOGLE_PLAY_SERVICE_ACCOUNT_JSON: JSON.stringify({ client_email: 'sa@x.iam', private_key: '-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n', token_uri: 'https://oauth2.example/token' }),
  });
  assert.equal(c.appleIap?.api?.privateKey, '-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----');
  assert.equal(c.appleIap?.environment, 'Production');
  assert.equal(c.appleIap?.appAppleId, 42);
  assert.equal(c.appleIap?.onlineChecks, true);
  assert.equal(c.googlePlay?.tokenUrl, 'https://oauth2.example/token');
  assert.equal(c.googlePlay?.apiUrl, 'https://androidpublisher.googleapis.com');
  assert.equal(c.googlePlay?.serviceAccount?.clientEmail, 'sa@x.iam');
  assert.equal(c.appleIap?.timeoutMs, 15_000, 'STORE_TIMEOUT_MS defaults to 15 s');
  assert.equal(c.googlePlay?.timeoutMs, 15_000);
});

test('STORE_TIMEOUT_MS sets both stores\' deadline; below 100 ms or not a number stops the process', () => {
  const google = { GOOGLE_PLAY_PACKAGE_NAME: 'com.x.android', GOOGLE_PLAY_SERVICE_ACCOUNT_JSON: JSON.stringify({ client_email: 'sa@x.iam', private_key: '-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n' }) };
  const c = loadConfig({ ...google, APPLE_BUNDLE_ID: 'com.x', APPLE_APP_APPLE_ID: '42', STORE_TIMEOUT_MS: '2500' });
  assert.equal(c.appleIap?.timeoutMs, 2500);
  assert.equal(c.googlePlay?.timeoutMs, 2500);
  refused({ ...google, STORE_TIMEOUT_MS: '50' }, /STORE_TIMEOUT_MS/);
  refused({ ...google, STORE_TIMEOUT_MS: 'soon' }, /STORE_TIMEOUT_MS/);
});

test('the embedded trusted root is Apple Root CA - G3, by its published fingerprint', () => {
  const [root, ...rest] = loadAppleRoots(null);
  assert.equal(rest.length, 0);
  const cert = new X509Certificate(root!);
  assert.match(cert.subject, /CN=Apple Root CA - G3/);
  assert.equal(cert.fingerprint256, '63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79');
  assert.ok(cert.ca);
});
