import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { backends } from '../helpers/backends.ts';
import { registerUser, startTestServer, type ApiResponse, type TestServer } from '../helpers/test-server.ts';
import { helloSync } from '../helpers/sync-socket.ts';

// Headers do not depend on the database: one backend is enough.
const backend = backends[0]!;
const ALLOWED = 'https://app.example.test';

function assertPrivate(res: ApiResponse | Response, what: string): void {
  assert.equal(res.headers.get('cache-control'), 'no-store', `${what}: cache-control`);
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff', `${what}: nosniff`);
  assert.equal(res.headers.get('x-powered-by'), null, `${what}: x-powered-by`);
}

describe('security headers', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend, { env: { CORS_ORIGINS: `${ALLOWED}, https://admin.example.test` } });
  });
  after(() => server.close());

  test('PHI and token answers, success and error alike, are no-store and nosniff, with no HSTS over plain HTTP', async () => {
    const u = await registerUser(server);
    const answers: Array<[string, ApiResponse]> = [
      ['sign-in', await server.api('POST', '/sign-in', { body: { email: u.email, password: u.password } })],
      ['refresh', await server.api('POST', '/token/refresh', { body: { refresh_token: u.refreshToken } })],
      ['patients', await server.api('GET', '/patient/my-patients', { token: u.token })],
      ['visit details (404)', await server.api('GET', '/visit-details/00000000-0000-4000-8000-000000000000', { token: u.token })],
      ['unauthenticated (401)', await server.api('GET', '/patient/my-patients')],
      ['wrong password (401)', await server.api('POST', '/sign-in', { body: { email: u.email, password: 'not-the-password-1' } })],
      ['invalid body (422)', await server.api('POST', '/sign-in', { body: { email: 'x' } })],
      ['malformed JSON (400)', await server.api('POST', '/sign-in', { rawBody: '{' })],
      ['unknown route (404)', await server.request('GET', '/no-such-path')],
      ['health', await server.request('GET', '/healthz')],
    ];
    assert.equal(answers[0]![1].status, 200);
    assert.equal(answers[1]![1].status, 200);
    assert.equal(answers[2]![1].status, 200);
    for (const [what, res] of answers) {
      assertPrivate(res, what);
      assert.equal(res.headers.get('strict-transport-security'), null, `${what}: HSTS without TLS`);
      assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'/, `${what}: CSP`);
    }
  });

  test("errors Node's parser answers before Fastify carry the same headers", async () => {
    const port = Number(new URL(server.url).port);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
      let data = '';
      socket.on('data', (d) => (data += String(d)));
      socket.on('close', () => resolve(data));
      socket.on('error', reject);
    });
    assert.match(raw, /^HTTP\/1\.1 431/);
    assert.match(raw, /\r\nX-Content-Type-Options: nosniff\r\n/i);
    assert.match(raw, /\r\nCache-Control: no-store\r\n/i);
  });

  test('the documentation assets stay cacheable and keep their own content policy', async () => {
    const css = await fetch(`${server.url}/docs/static/swagger-ui.css`);
    assert.equal(css.status, 200);
    assert.match(css.headers.get('content-type') ?? '', /text\/css/);
    assert.notEqual(css.headers.get('cache-control'), 'no-store');
    assert.equal(css.headers.get('x-content-type-options'), 'nosniff');
    await css.arrayBuffer();
    const page = await fetch(`${server.url}/docs/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    await page.text();
  });

  test('the sync websocket still upgrades and says welcome', async () => {
    const u = await registerUser(server);
    const { socket, welcome } = await helloSync(server, u.token, randomUUID());
    assert.equal(welcome.type, 'welcome');
    socket.close();
  });

  test('CORS: a listed origin is answered, its preflight allowed; another origin gets no CORS headers', async () => {
    const u = await registerUser(server);
    const allowed = await server.api('GET', '/my-profile', { token: u.token, headers: { origin: ALLOWED } });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers.get('access-control-allow-origin'), ALLOWED);
    assert.match(allowed.headers.get('access-control-expose-headers') ?? '', /retry-after/);
    assert.match(allowed.headers.get('vary') ?? '', /origin/i);

    const preflight = (origin: string) =>
      fetch(`${server.url}/api/therapist/v1/patient/create`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, idempotency-key' },
      });
    const ok = await preflight(ALLOWED);
    assert.equal(ok.status, 204);
    assert.equal(ok.headers.get('access-control-allow-origin'), ALLOWED);
    assert.match(ok.headers.get('access-control-allow-methods') ?? '', /POST/);
    assert.equal(ok.headers.get('access-control-allow-headers'), 'authorization, content-type, idempotency-key');
    await ok.arrayBuffer();

    const refused = await preflight('https://evil.example.test');
    assert.equal(refused.status, 404);
    assert.equal(refused.headers.get('access-control-allow-origin'), null);
    assert.equal(refused.headers.get('access-control-allow-methods'), null);
    await refused.arrayBuffer();

    const other = await server.api('GET', '/my-profile', { token: u.token, headers: { origin: 'https://evil.example.test' } });
    assert.equal(other.headers.get('access-control-allow-origin'), null);

    // The resumable-upload endpoint (tus answers its own CORS) follows the same list.
    const tus = (origin: string) =>
      fetch(`${server.url}/api/therapist/v1/ai/uploads`, { method: 'POST', headers: { origin, authorization: `Bearer ${u.token}`, 'tus-resumable': '1.0.0', 'upload-length': '10' } });
    const tusOther = await tus('https://evil.example.test');
    assert.equal(tusOther.headers.get('access-control-allow-origin'), null);
    assert.equal(tusOther.headers.get('cache-control'), 'no-store');
    assert.equal(tusOther.headers.get('x-content-type-options'), 'nosniff');
    await tusOther.arrayBuffer();
    const tusOk = await tus(ALLOWED);
    assert.equal(tusOk.headers.get('access-control-allow-origin'), ALLOWED);
    await tusOk.arrayBuffer();
  });
});

describe('security headers without CORS origins, behind TLS', () => {
  let server: TestServer;
  before(async () => {
    // APP_URL https: a TLS proxy in front; HSTS is sent.
    server = await startTestServer(backend, { env: { APP_URL: 'https://fieldchart.example.test' } });
  });
  after(() => server.close());

  test('HSTS is sent and no origin is allowed', async () => {
    const res = await server.request('GET', '/healthz', { headers: { origin: ALLOWED } });
    assert.match(res.headers.get('strict-transport-security') ?? '', /max-age=31536000; includeSubDomains/);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
    assertPrivate(res, 'healthz');
  });
});

test('CORS_ORIGINS refuses a value that is not an origin', async () => {
  const { loadConfig, ConfigError } = await import('../../server/src/config.ts');
  assert.throws(() => loadConfig({ CORS_ORIGINS: 'https://app.example.test/path' }), (err: unknown) => err instanceof ConfigError && /CORS_ORIGINS/.test(err.message));
  assert.throws(() => loadConfig({ CORS_ORIGINS: '*' }), ConfigError);
  assert.deepEqual(loadConfig({ CORS_ORIGINS: 'https://a.test, http://localhost:5173' }).corsOrigins, ['https://a.test', 'http://localhost:5173']);
});
