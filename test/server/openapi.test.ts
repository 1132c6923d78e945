/**
 * The API description (`/api/therapist/v1/openapi.json`, `/docs`) against the routes the
 * server really registers and the way they really behave, plus the health probes.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../helpers/backends.ts';
import { API, startTestServer, type TestServer } from '../helpers/test-server.ts';

/** The spec paths implemented so far, and which of them need no bearer token. */
const SPEC_ROUTES: ReadonlyArray<{ method: string; path: string; public: boolean }> = [
  { method: 'post', path: '/sign-in', public: true },
  { method: 'post', path: '/sign-in/social', public: true },
  { method: 'post', path: '/register', public: true },
  { method: 'post', path: '/register/social', public: true },
  { method: 'post', path: '/forgot-password/send-otp', public: true },
  { method: 'post', path: '/forgot-password/verify-otp', public: true },
  { method: 'post', path: '/forgot-password/reset', public: true },
  { method: 'post', path: '/token/refresh', public: true },
  { method: 'post', path: '/logout', public: false },
  { method: 'post', path: '/change-password', public: false },
  { method: 'post', path: '/delete-account', public: false },
  { method: 'get', path: '/my-profile', public: false },
  { method: 'put', path: '/update-basic-info', public: false },
  { method: 'post', path: '/complete-onboarding', public: false },
  { method: 'get', path: '/therapist-discipline', public: false },
  { method: 'get', path: '/master/setting-list', public: false },
  { method: 'get', path: '/subscription/status', public: false },
  { method: 'post', path: '/subscription/verify-receipt', public: false },
  { method: 'get', path: '/messages/conversations', public: false },
  { method: 'get', path: '/messages/{conversationId}', public: false },
  { method: 'post', path: '/messages/send', public: false },
  { method: 'put', path: '/messages/{conversationId}/read', public: false },
  { method: 'get', path: '/notifications', public: false },
  { method: 'post', path: '/register-fcm-token', public: false },
];

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'];

interface Operation {
  security?: Array<Record<string, string[]>>;
  requestBody?: { required?: boolean; content?: Record<string, { schema?: any }> };
  responses?: Record<string, { content?: Record<string, { schema?: any }> }>;
}

type Paths = Record<string, Record<string, Operation>>;

function operations(paths: Paths): Array<{ method: string; path: string; op: Operation }> {
  return Object.entries(paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.includes(method))
      .map(([method, op]) => ({ method, path, op })),
  );
}

/**
 * The routes Fastify registered, as `METHOD /path` with OpenAPI-style `{param}`s, read from
 * `printRoutes({ commonPrefix: false })`: a tree whose children append to their parent.
 */
function registeredRoutes(tree: string): Set<string> {
  const out = new Set<string>();
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^((?:[│ ]   )*)[├└]── (.+?)(?: \(([^)]*)\))?$/.exec(line);
    if (!m) continue;
    const depth = (m[1] ?? '').length / 4;
    const path = (stack[depth - 1] ?? '') + (m[2] ?? '');
    stack.length = depth;
    stack.push(path);
    for (const method of (m[3] ?? '').split(',').map((s) => s.trim().toLowerCase())) {
      if (method && method !== 'head' && method !== '-') out.add(`${method} ${path.replace(/:(\w+)/g, '{$1}')}`);
    }
  }
  return out;
}

/** Every `$ref` in a JSON value. */
function refsIn(value: unknown): string[] {
  return [...JSON.stringify(value).matchAll(/"\$ref":"([^"]+)"/g)].map((m) => m[1] ?? '');
}

forEachBackend('API description and health', (backend) => {
  let server: TestServer;
  let doc: any;
  before(async () => {
    server = await startTestServer(backend);
    const res = await server.api('GET', '/openapi.json');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    doc = res.body;
  });
  after(() => server.close());

  test('openapi.json is an OpenAPI 3.1 document', () => {
    assert.match(doc.openapi, /^3\.1\.\d+$/);
    assert.equal(typeof doc.info?.title, 'string');
    assert.equal(typeof doc.info?.version, 'string');
    assert.equal(typeof doc.paths, 'object');
  });

  test('it lists every spec route implemented so far', () => {
    const documented = new Set(operations(doc.paths).map((o) => `${o.method} ${o.path}`));
    for (const r of SPEC_ROUTES) assert.ok(documented.has(`${r.method} ${API}${r.path}`), `${r.method} ${r.path} is not documented`);
  });

  test('every registered route is documented, and nothing else', () => {
    const registered = registeredRoutes(server.runtime.app.printRoutes({ commonPrefix: false }));
    // The documentation itself (swagger-ui's assets, the JSON) is deliberately not an operation.
    // The sync channel is a websocket, described by docs/sync-protocol.md rather than OpenAPI.
    // The stores' notification webhooks are called by Apple and Google Pub/Sub, not by apps:
    // docs/subscriptions.md describes them. The tus endpoint (/uploads) speaks the tus protocol,
    // described by docs/audio.md. CORS preflights (`OPTIONS *`) are answered by @fastify/cors
    // (docs/operations.md). The field app's static files (/app, when built) are a web app, not
    // operations (docs/field-app.md).
    const storeWebhooks = [`post ${API}/subscription/notifications/apple`, `post ${API}/subscription/notifications/google`];
    assert.ok(storeWebhooks.every((r) => registered.has(r)), 'the store webhooks are registered');
    const expected = [...registered]
      .filter((r) => r !== 'options *' && !/^\w+ \/docs(\/|$)/.test(r) && !/^\w+ \/app(\/|\*|$)/.test(r) && r !== `get ${API}/openapi.json` && r !== `get ${API}/sync` && !storeWebhooks.includes(r) && !r.startsWith(`post ${API}/uploads`) && !new RegExp(`^\\w+ ${API}/uploads/`).test(r) && !r.startsWith(`options ${API}/uploads`))
      .sort();
    assert.ok(expected.length >= SPEC_ROUTES.length, `route tree not understood:\n${server.runtime.app.printRoutes({ commonPrefix: false })}`);
    const documented = operations(doc.paths)
      .map((o) => `${o.method} ${o.path}`)
      .sort();
    assert.deepEqual(documented, expected);
    assert.ok(documented.includes('get /healthz') && documented.includes('get /readyz'));
  });

  test('every operation has a unique operationId, and every POST/PUT documents Idempotency-Key', () => {
    const ids: string[] = [];
    for (const [, ops] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        assert.equal(typeof op.operationId, 'string');
        ids.push(op.operationId);
        if (method === 'post' || method === 'put') {
          const header = (op.parameters ?? []).find((p: any) => p.in === 'header' && p.name === 'idempotency-key');
          assert.ok(header, `${method} ${op.operationId} does not document Idempotency-Key`);
        }
      }
    }
    assert.equal(new Set(ids).size, ids.length, 'operationIds repeat');
  });

  test('request bodies are described by the validating schemas', () => {
    const bodyOf = (path: string, method = 'post') => doc.paths[API + path][method].requestBody?.content?.['application/json']?.schema;
    const register = bodyOf('/register');
    assert.equal(doc.paths[`${API}/register`].post.requestBody.required, true);
    assert.deepEqual([...register.required].sort(), ['email', 'first_name', 'last_name', 'password', 'password_confirmation']);
    assert.equal(register.properties.password.minLength, 8);
    assert.deepEqual([...bodyOf('/sign-in').required].sort(), ['email', 'password']);
    assert.deepEqual(bodyOf('/token/refresh').required, ['refresh_token']);
    assert.deepEqual(bodyOf('/complete-onboarding').properties.discipline.enum, ['PT', 'PTA', 'OT', 'COTA', 'SLP', 'SLPA', 'RN', 'LPN', 'MSW', 'HHA']);
    assert.deepEqual(Object.keys(bodyOf('/update-basic-info', 'put').properties).sort(), ['address', 'email', 'first_name', 'last_name', 'phone']);
    assert.equal(bodyOf('/logout'), undefined, 'logout takes no body');
  });

  test('bearer security on protected spec routes, none on public ones', () => {
    assert.deepEqual(doc.components.securitySchemes.bearer, { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
    assert.equal(doc.security, undefined, 'no document-wide requirement: each operation says');
    for (const r of SPEC_ROUTES) {
      const op: Operation = doc.paths[API + r.path][r.method];
      if (r.public) assert.ok(op.security === undefined || op.security.length === 0, `${r.path} should be public`);
      else assert.deepEqual(op.security, [{ bearer: [] }], `${r.path} should require a bearer token`);
    }
  });

  test('the documented security matches what the server enforces, on every operation', async () => {
    for (const { method, path, op } of operations(doc.paths)) {
      const url = path.replace(/\{\w+\}/g, randomUUID());
      // No token, and an empty body: a public route rejects the body, a protected one the caller.
      const res = await server.request(method.toUpperCase(), url, method === 'get' ? {} : { body: {} });
      const protectedByDoc = (op.security ?? []).some((s) => 'bearer' in s);
      if (protectedByDoc) {
        assert.equal(res.status, 401, `${method} ${path} is documented as protected`);
        assert.equal(res.body.code, 'missing_token');
      } else {
        assert.notEqual(res.body?.code, 'missing_token', `${method} ${path} is documented as public`);
      }
    }
  });

  test('shared schemas are components, referenced rather than inlined', () => {
    const schemas = doc.components.schemas as Record<string, any>;
    for (const name of ['Error', 'LoginData', 'User']) assert.ok(schemas[name], `components.schemas.${name}`);
    assert.deepEqual([...schemas.Error.required].sort(), ['code', 'message', 'status']);

    // Every $ref resolves, and every component is used somewhere.
    const refs = new Set(refsIn(doc));
    for (const ref of refs) {
      const name = /^#\/components\/schemas\/(.+)$/.exec(ref)?.[1];
      assert.ok(name && schemas[name], `dangling $ref ${ref}`);
    }
    for (const name of Object.keys(schemas)) assert.ok(refs.has(`#/components/schemas/${name}`), `unused component ${name}`);

    // Every error response of the API is the one Error schema.
    for (const { method, path, op } of operations(doc.paths)) {
      if (!path.startsWith(API)) continue;
      assert.ok(op.responses?.['200'], `${method} ${path} documents its 200`);
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        if (Number(status) < 400) continue;
        assert.deepEqual(response.content?.['application/json']?.schema, { $ref: '#/components/schemas/Error' }, `${method} ${path} ${status}`);
      }
    }

    const dataOf = (path: string, method: string) => doc.paths[API + path][method].responses['200'].content['application/json'].schema.properties.data;
    assert.deepEqual(dataOf('/my-profile', 'get'), { $ref: '#/components/schemas/User' });
    assert.deepEqual(dataOf('/sign-in', 'post').properties.loginData, { $ref: '#/components/schemas/LoginData' });
    assert.deepEqual(dataOf('/register', 'post').properties.user, { $ref: '#/components/schemas/User' });
  });

  test('every status the framework or the edge can answer is documented on each operation it applies to', () => {
    for (const { method, path, op } of operations(doc.paths)) {
      if (!path.startsWith(API)) continue;
      const documented = new Set(Object.keys(op.responses ?? {}));
      const expected = ['408', '431'];
      if (method === 'post' || method === 'put') expected.push('400', '409', '413', '415', '422');
      if (path.includes('{')) expected.push('404');
      if (((op as { parameters?: Array<{ in: string }> }).parameters ?? []).some((p) => p.in === 'query')) expected.push('422');
      if ((op.security ?? []).length > 0) expected.push('401');
      for (const status of expected) assert.ok(documented.has(status), `${method} ${path} does not document ${status}`);
    }
    const responses = (path: string) => Object.keys(doc.paths[API + path].post.responses);
    for (const action of ['accept', 'decline']) assert.ok(responses(`/my-invitations/{uuid}/${action}`).includes('403'), `${action}: 403 email_unverified`);
    assert.ok(responses('/complete-onboarding').includes('404'), 'complete-onboarding: 404 unknown organization');
  });

  test('the documented framework statuses are what the server answers, in the contract shape', async () => {
    const check = (res: { status: number; body: any }, status: number, code: string) => {
      assert.equal(res.status, status, JSON.stringify(res.body));
      assert.deepEqual(Object.keys(res.body).sort(), ['code', 'message', 'status']);
      assert.equal(res.body.code, code);
    };
    check(await server.api('POST', '/sign-in', { rawBody: '{"email":' }), 400, 'malformed_json');
    check(await server.api('POST', '/sign-in', { rawBody: 'email=a', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415, 'unsupported_media_type');
    check(await server.api('POST', '/sign-in', { rawBody: JSON.stringify({ email: 'x'.repeat(2_000_000) }) }), 413, 'payload_too_large');
    const badKey = await server.api('POST', '/sign-in', { body: { email: 'a@example.test', password: 'whatever-long' }, headers: { 'idempotency-key': 'has space' } });
    assert.deepEqual([badKey.status, badKey.body.code], [422, 'invalid_idempotency_key']);
  });

  test('/docs is a swagger-ui page served from this server', async () => {
    const page = await server.request('GET', '/docs');
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    const html = String(page.body);
    assert.match(html, /swagger-ui/i);
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? '');
    assert.ok(assets.some((a) => a.endsWith('swagger-ui-bundle.js')), 'loads the swagger-ui bundle');
    for (const asset of assets) {
      assert.doesNotMatch(asset, /^(https?:)?\/\//, `${asset} is not served locally`);
      const res = await fetch(new URL(asset, `${server.url}/docs`));
      assert.equal(res.status, 200, asset);
      await res.arrayBuffer();
    }
    const initializer = await server.request('GET', '/docs/static/swagger-initializer.js');
    assert.equal(initializer.status, 200);
    for (const text of [html, String(initializer.body)]) {
      assert.doesNotMatch(text, /unpkg\.com|jsdelivr|cdnjs|googleapis|validator\.swagger\.io/);
    }
    // The page browses the same document the API publishes.
    const json = await server.request('GET', '/docs/json');
    assert.equal(json.status, 200);
    assert.deepEqual(json.body, doc);
  });

  test('/healthz and /readyz answer 200 with their checks', async () => {
    const health = await server.request('GET', '/healthz');
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, { status: true, checks: { process: 'ok' } });
    const ready = await server.request('GET', '/readyz');
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body, { status: true, checks: { database: 'ok', worker: 'ok' } });
  });
});

forEachBackend('readiness without a database', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('/readyz answers 503 once the database is closed; /healthz stays 200', async () => {
    assert.equal((await server.request('GET', '/readyz')).status, 200);
    await server.runtime.database.close();
    const ready = await server.request('GET', '/readyz');
    assert.equal(ready.status, 503);
    assert.equal(ready.body.status, false);
    assert.equal(ready.body.checks.database, 'failing');
    const health = await server.request('GET', '/healthz');
    assert.equal(health.status, 200);
    assert.equal(health.body.status, true);
  });
});
