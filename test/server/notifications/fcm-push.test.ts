/**
 * Push through FCM HTTP v1 against a local stand-in of Google's two endpoints on 127.0.0.1:
 * the OAuth2 JWT-bearer token exchange (the assertion's RS256 signature, audience and scope
 * are verified with the service account's public key) and messages:send, which answers
 * UNREGISTERED (404), INVALID_ARGUMENT on message.token (400) or a transient 503 for chosen
 * tokens. Dead tokens are pruned, a transient failure is retried by the job, the access token
 * is cached, and the notification is recorded either way.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { importSPKI, jwtVerify } from 'jose';
import { forEachBackend } from '../../helpers/backends.ts';
import { eventually } from '../../helpers/eventually.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';

const PROJECT = 'fieldchart-test';
const CLIENT_EMAIL = 'push@fieldchart-test.iam.gserviceaccount.com';
const token = (name: string) => `${name}:${'A1b2-C3d4_'.repeat(12)}`;

interface Delivery {
  readonly token: string;
  readonly title: string;
  readonly body: string;
  readonly data: Record<string, string>;
}

interface FcmStandIn {
  readonly url: string;
  readonly deliveries: Delivery[];
  exchanges: number;
  readonly dead: Set<string>;
  readonly invalid: Set<string>;
  /** Tokens answered 503 once, then accepted. */
  readonly flaky: Set<string>;
  close(): Promise<void>;
}

async function startFcmStandIn(publicKeyPem: string): Promise<FcmStandIn> {
  const key = await importSPKI(publicKeyPem, 'RS256');
  const state = { deliveries: [] as Delivery[], exchanges: 0, dead: new Set<string>(), invalid: new Set<string>(), flaky: new Set<string>() };
  const issued = new Set<string>();
  let url = '';
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const json = (status: number, value: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(value));
        };
        if (req.method === 'POST' && req.url === '/token') {
          const form = new URLSearchParams(body);
          if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return json(400, { error: 'unsupported_grant_type' });
          try {
            const { payload } = await jwtVerify(form.get('assertion') ?? '', key, { issuer: CLIENT_EMAIL, audience: `${url}/token` });
            if (payload.scope !== 'https://www.googleapis.com/auth/firebase.messaging') return json(400, { error: 'invalid_scope' });
          } catch {
            return json(400, { error: 'invalid_grant' });
          }
          state.exchanges++;
          const accessToken = `ya29.test-${state.exchanges}`;
          issued.add(accessToken);
          return json(200, { access_token: accessToken, expires_in: 3599, token_type: 'Bearer' });
        }
        if (req.method === 'POST' && req.url === `/v1/projects/${PROJECT}/messages:send`) {
          const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
          if (!bearer || !issued.has(bearer)) return json(401, { error: { code: 401, status: 'UNAUTHENTICATED' } });
          const { message } = JSON.parse(body) as { message: { token: string; notification: { title: string; body: string }; data: Record<string, string> } };
          if (state.dead.has(message.token)) {
            return json(404, {
              error: { code: 404, status: 'NOT_FOUND', message: 'Requested entity was not found.', details: [{ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'UNREGISTERED' }] },
            });
          }
          if (state.invalid.has(message.token)) {
            return json(400, {
              error: {
                code: 400,
                status: 'INVALID_ARGUMENT',
                details: [
                  { '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode: 'INVALID_ARGUMENT' },
                  { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field: 'message.token', description: 'Invalid registration token' }] },
                ],
              },
            });
          }
          if (state.flaky.delete(message.token)) return json(503, { error: { code: 503, status: 'UNAVAILABLE' } });
          state.deliveries.push({ token: message.token, title: message.notification.title, body: message.notification.body, data: message.data });
          return json(200, { name: `projects/${PROJECT}/messages/${state.deliveries.length}` });
        }
        json(404, { error: { code: 404, status: 'NOT_FOUND' } });
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(state, {
    url,
    get exchanges() {
      return state.exchanges;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }) as FcmStandIn;
}

forEachBackend('notifications: push through FCM HTTP v1 (local stand-in)', (backend) => {
  let server: TestServer;
  let fcm: FcmStandIn;
  before(async () => {
    const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    fcm = await startFcmStandIn(publicKey.export({ type: 'spki', format: 'pem' }).toString());
    const serviceAccount = {
      type: 'service_account',
      project_id: PROJECT,
      client_email: CLIENT_EMAIL,
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      token_uri: 'https://oauth2.googleapis.com/token',
    };
    server = await startTestServer(backend, {
      env: { FCM_SERVICE_ACCOUNT_JSON: JSON.stringify(serviceAccount), FCM_API_URL: fcm.url, FCM_TOKEN_URL: `${fcm.url}/token` },
    });
  });
  after(async () => {
    await server.close();
    await fcm.close();
  });

  const register = async (userToken: string, fcmToken: string) => {
    const res = await server.api('POST', '/register-fcm-token', { token: userToken, body: { fcm_token: fcmToken } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
  };
  const record = (userId: string, data: Record<string, string>) =>
    server.runtime.services.notifications.record(server.runtime.database.db, { userId, type: 'note_ready', data });

  test('every device of the user gets the push; dead and invalid tokens are pruned; the token is cached; transient failures retry', async () => {
    const me = await registerUser(server);
    const other = await registerUser(server);
    const [phone, tablet, gone, broken, flaky, othersPhone] = ['phone', 'tablet', 'gone', 'broken', 'flaky', 'others'].map((n) => token(`${n}-${me.uuid.slice(0, 8)}`)) as [string, string, string, string, string, string];
    for (const t of [phone, tablet, gone, broken, flaky]) await register(me.token, t);
    await register(me.token, phone); // the same device again: deduplicated
    await register(other.token, othersPhone);
    assert.deepEqual((await server.runtime.services.pushTokens.of(me.uuid)).sort(), [broken, flaky, gone, phone, tablet].sort());
    fcm.dead.add(gone);
    fcm.invalid.add(broken);
    fcm.flaky.add(flaky);

    const exchangesBefore = fcm.exchanges;
    const scheduleUuid = '6f1c2a9e-1b7e-4c59-9a51-1f2d3c4b5a69';
    const id = await record(me.uuid, { schedule_uuid: scheduleUuid });
    await eventually(
      () => {
        const got = fcm.deliveries.filter((d) => d.data.notification_uuid === id).map((d) => d.token);
        assert.deepEqual(got.sort(), [flaky, phone, tablet].sort(), 'the flaky device after its retry');
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    const delivered = fcm.deliveries.find((d) => d.data.notification_uuid === id);
    assert.deepEqual(delivered && [delivered.title, delivered.data.type, delivered.data.schedule_uuid], ['Your note is ready', 'note_ready', scheduleUuid]);
    assert.ok(!fcm.deliveries.some((d) => d.token === othersPhone), 'another user’s device gets nothing');
    await eventually(async () => assert.deepEqual((await server.runtime.services.pushTokens.of(me.uuid)).sort(), [flaky, phone, tablet].sort()), { timeoutMs: 15_000 });
    assert.ok(fcm.exchanges - exchangesBefore <= 1, `one token exchange for every send (${fcm.exchanges - exchangesBefore})`);

    // Recorded either way, readable over REST.
    const list = await server.api('GET', '/notifications', { token: me.token });
    assert.equal(list.body.data[0].uuid, id);

    // The next notification reuses the cached access token.
    const exchanges = fcm.exchanges;
    const second = await record(me.uuid, { schedule_uuid: scheduleUuid });
    await eventually(() => assert.equal(fcm.deliveries.filter((d) => d.data.notification_uuid === second).length, 3), { timeoutMs: 15_000 });
    assert.equal(fcm.exchanges, exchanges);
  });
});

test('FCM and inbound-mail configuration: invalid values stop the boot naming the variable; unset means off', async () => {
  const { loadConfig } = await import('../../../server/src/config.ts');
  assert.throws(() => loadConfig({ FCM_SERVICE_ACCOUNT_JSON: '{not json' }), /FCM_SERVICE_ACCOUNT_JSON/);
  assert.throws(() => loadConfig({ FCM_SERVICE_ACCOUNT_JSON: JSON.stringify({ project_id: 'p' }) }), /FCM_SERVICE_ACCOUNT_JSON: missing or invalid client_email, private_key/);
  assert.throws(() => loadConfig({ INBOUND_SMTP_PORT: 'smtp' }), /INBOUND_SMTP_PORT/);
  assert.throws(() => loadConfig({ MESSAGES_REPLY_DOMAIN: 'bad domain' }), /MESSAGES_REPLY_DOMAIN/);
  const defaults = loadConfig({});
  assert.equal(defaults.fcm, null);
  assert.equal(defaults.messages.inboundSmtp, null);
  assert.equal(defaults.messages.replyDomain, 'fieldchart.local');
  const account = { project_id: 'p', client_email: 'a@p.iam.gserviceaccount.com', private_key: '-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n', token_uri: 'https://oauth2.example.test/token' };
  const on = loadConfig({ FCM_SERVICE_ACCOUNT_JSON: JSON.stringify(account), INBOUND_SMTP_PORT: '2525' });
  assert.deepEqual([on.fcm?.apiUrl, on.fcm?.tokenUrl], ['https://fcm.googleapis.com', 'https://oauth2.example.test/token']);
  assert.deepEqual(on.messages.inboundSmtp, { host: '127.0.0.1', port: 2525, maxBytes: 2 * 1024 * 1024 });
});
