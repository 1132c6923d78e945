/**
 * Property-based fuzzing of every REST operation the OpenAPI document lists (read at run
 * time, so a new route is fuzzed without touching this file), as tenant A against a server
 * where tenant B has a patient, a documented visit and an organization. Inputs mostly follow
 * each operation's schema (so they reach the services) and mix in what issue 9 found: wrong
 * types, huge and unicode strings with NUL and lone surrogates, dates outside 1900–2100,
 * extreme numbers, `__proto__` members, foreign and malformed ids, odd content types.
 *
 * For every response: never a 5xx; the contract's body (`errors` only on a 422); a status the
 * document lists for that operation; nothing of B's in it. Afterwards B's own reads answer
 * exactly what they answered before.
 *
 * Replay: the seed is printed (`fuzz seed N`); run again with FUZZ_SEED=N (and FUZZ_RUNS to
 * change the runs per operation, default 15).
 *
 * Not fuzzed, because a success would end the fuzzing user's session or account, not because
 * they are fragile: POST /logout, POST /delete-account. Both are covered by the accounts suites.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { forEachBackend } from '../../helpers/backends.ts';
import { API, RATE_LIMITS_OFF, registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { orgWithAdmin } from '../organizations/org-fixtures.ts';
import { createPatient, gps, scheduleVisit, utcClinician } from '../visits/visit-fixtures.ts';
import { anyJson, encodeLoose, pathValue, resolver, valueFor, type Ctx, type Hostility, type IdPool, type JsonSchema } from './arbitraries.ts';

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
const RUNS = Number(process.env.FUZZ_RUNS ?? 15);
/** Only operations whose `METHOD /path` contains this (replaying one failure). */
const ONLY = process.env.FUZZ_ONLY ?? '';
const SKIPPED = new Set([`post ${API}/logout`, `post ${API}/delete-account`]);

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema?: JsonSchema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
  responses?: Record<string, unknown>;
  security?: unknown[];
}

interface FuzzRequest {
  path: string;
  query: string;
  body: string | undefined;
  contentType: string | undefined;
  auth: 'own' | 'none' | 'garbage';
  idempotencyKey: string | undefined;
}

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'application/xml',
  '',
];

forEachBackend('fuzz: every REST operation, two tenants', (backend) => {
  let server: TestServer;
  let doc: { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, JsonSchema> } };
  let a: Awaited<ReturnType<typeof registerUser>>;
  let b: Awaited<ReturnType<typeof registerUser>>;
  let ids: IdPool;
  let markers: string[];
  let bReads: string[];

  before(async () => {
    // The request limits are off: at FUZZ_RUNS=300 they answered 429 to 20,349 of 26,400
    // requests, which then never reached a route. The limits have suites of their own.
    server = await startTestServer(backend, { env: RATE_LIMITS_OFF });
    doc = (await server.api('GET', '/openapi.json')).body;
    const tag = Math.random().toString(36).slice(2, 10);
    markers = [`Bfirst${tag}`, `Blast${tag}`, `Bnote${tag}`, `Bsubjective${tag}`, `555-01${tag.slice(0, 2)}`, `Bstreet${tag}`];

    // Tenant B: an organization admin with a patient, a visit with timer events, mileage and a note.
    b = await utcClinician(server);
    const org = await orgWithAdmin(server, { admin: b });
    const bPatient = await createPatient(server, b, { first_name: markers[0], last_name: markers[1], phone: markers[4], address: markers[5] });
    const bVisit = await scheduleVisit(server, b, { patient_uuid: bPatient.uuid, visit_date: '2026-06-01', start_time: '09:00', notes: markers[2] });
    const bOpen = await scheduleVisit(server, b, { patient_uuid: bPatient.uuid, visit_date: '2026-06-08', start_time: '10:00' });
    const ev = (event_type: string, event_time: string) => ({ event_type, event_time, ...gps });
    const events = [ev('start_travel', '2026-06-01T08:30:00Z'), ev('arrive', '2026-06-01T09:00:00Z'), ev('start_documentation', '2026-06-01T09:30:00Z'), ev('complete', '2026-06-01T09:45:00Z')];
    const ok = (res: { status: number; body: unknown }) => assert.equal(res.status, 200, JSON.stringify(res.body));
    ok(await server.api('POST', '/visit-timer-events', { token: b.token, body: { schedule_uuid: bVisit, events } }));
    ok(await server.api('PUT', `/visit/${bVisit}/mileage`, { token: b.token, body: { total_miles: 12.5 } }));
    const note = { schedule_uuid: bVisit, subjective: markers[3], objective: 'o', assessment: 'a', plan: 'p', vital_signs: { bp: '120/80' } };
    ok(await server.api('POST', '/patient-referral-end-visit-note', { token: b.token, body: note }));
    const invited = await server.api('POST', '/my-organization/invitations', { token: b.token, body: { email: `invitee.${tag}@example.test` } });
    ok(invited);
    const bInvitation = (await server.api('GET', '/my-organization/invitations', { token: b.token })).body.data[0].uuid as string;

    // Tenant A: a clinician with a patient and a visit of their own.
    a = await utcClinician(server);
    const aPatient = await createPatient(server, a);
    const aVisit = await scheduleVisit(server, a, { patient_uuid: aPatient.uuid, visit_date: '2026-06-02', start_time: '11:00' });
    ids = {
      own: [aPatient.uuid, aPatient.referral_uuid, aVisit],
      foreign: [bPatient.uuid, bPatient.referral_uuid, bVisit, bOpen, org.uuid, bInvitation, b.uuid],
    };
    bReads = [
      '/my-profile',
      '/my-settings',
      '/patient/my-patients',
      `/patient/chart-details/${bPatient.referral_uuid}`,
      `/visit-details/${bVisit}`,
      `/visit-details/${bOpen}`,
      '/get-upcomming-visits?filter=all&filter_date=2026-05-01',
      '/get-visit-history',
      '/document/list',
      '/my-organization',
      '/my-organization/invitations',
      '/my-organization/config',
      '/reports/summary?from=2026-01-01&to=2026-12-31',
    ];
  });
  after(() => server?.close());

  async function snapshotOfB(): Promise<unknown[]> {
    return Promise.all(
      bReads.map(async (path) => {
        const res = await server.api('GET', path, { token: b.token });
        assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
        return { path, body: res.body };
      }),
    );
  }

  function requestArbitrary(path: string, method: string, op: Operation): fc.Arbitrary<FuzzRequest> {
    return fc.constantFrom<Hostility>(0, 1, 1, 2).chain((hostility) => requestAt(path, method, op, { ids, resolve: resolver(doc.components.schemas), hostility }));
  }

  function requestAt(path: string, method: string, op: Operation, ctx: Ctx): fc.Arbitrary<FuzzRequest> {
    const params = op.parameters ?? [];
    const pathParams = params.filter((p) => p.in === 'path');
    const queryParams = params.filter((p) => p.in === 'query');
    const bodySchema = op.requestBody?.content?.['application/json']?.schema;
    const hasBody = method === 'post' || method === 'put';

    const pathArb = fc.tuple(...pathParams.map(() => pathValue(ids, ctx.hostility))).map((values) => {
      let p = path;
      pathParams.forEach((param, i) => (p = p.replace(`{${param.name}}`, values[i] ?? '')));
      return p;
    });
    const queryArb = fc
      .tuple(...queryParams.map((param) => fc.option(valueFor(param.schema ?? {}, ctx), { freq: 2 })))
      .map((values) =>
        queryParams
          .map((param, i) => {
            const v = values[i];
            if (v === null || v === undefined) return null;
            return `${param.name}=${encodeLoose(typeof v === 'string' ? v : JSON.stringify(v))}`;
          })
          .filter((s): s is string => s !== null)
          .join('&'),
      );
    const valueArb = bodySchema ? valueFor(bodySchema, ctx) : anyJson;
    const json = valueArb.map((v) => JSON.stringify(v) ?? 'null');
    // Levels 0 and 1 keep the envelope right (so the body's members are what is tested);
    // level 2 also breaks the envelope: prototype poisoning, malformed JSON, no body, odd
    // content types, no or a forged token, bad Idempotency-Keys.
    const wild = ctx.hostility === 2;
    const bodyArb: fc.Arbitrary<string | undefined> = !hasBody
      ? fc.constant(undefined)
      : !wild
        ? json
        : fc.oneof(
            { weight: 4, arbitrary: json },
            { weight: 1, arbitrary: valueArb.map((v) => `{"__proto__":{"polluted":true},"v":${JSON.stringify(v) ?? 'null'}}`) },
            { weight: 1, arbitrary: valueArb.map((v) => `{"constructor":{"prototype":{"polluted":true}},"v":${JSON.stringify(v) ?? 'null'}}`) },
            { weight: 1, arbitrary: json.map((t) => t.slice(0, -1)) },
            { weight: 1, arbitrary: fc.constant(undefined) },
          );
    return fc.record({
      path: pathArb,
      query: queryArb,
      body: bodyArb,
      contentType: wild ? fc.oneof({ weight: 3, arbitrary: fc.constant('application/json') }, { weight: 2, arbitrary: fc.constantFrom(...CONTENT_TYPES) }, { weight: 1, arbitrary: fc.constant(undefined) }) : fc.constant('application/json'),
      auth: wild ? fc.oneof({ weight: 4, arbitrary: fc.constant('own' as const) }, { weight: 1, arbitrary: fc.constantFrom('none' as const, 'garbage' as const) }) : fc.constant('own' as const),
      idempotencyKey: fc.oneof(
        { weight: 6, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.uuid() },
        ...(wild ? [{ weight: 1, arbitrary: fc.constantFrom('has space', 'k'.repeat(300), 'cl\u00e9', '') }] : []),
      ),
    });
  }

  async function send(method: string, r: FuzzRequest) {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (r.auth === 'own') headers.authorization = `Bearer ${a.token}`;
    if (r.auth === 'garbage') headers.authorization = 'Bearer eyJhbGciOiJub25lIn0.e30.';
    if (r.idempotencyKey !== undefined) headers['idempotency-key'] = r.idempotencyKey;
    if (r.body !== undefined && r.contentType !== undefined) headers['content-type'] = r.contentType;
    const url = `${server.url}${r.path}${r.query ? `?${r.query}` : ''}`;
    const res = await fetch(url, { method: method.toUpperCase(), headers, ...(r.body !== undefined ? { body: r.body } : {}) });
    return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
  }

  function check(path: string, method: string, op: Operation, r: FuzzRequest, res: { status: number; contentType: string; text: string }) {
    const where = `${method.toUpperCase()} ${r.path.slice(0, 200)}${r.query ? `?${r.query.slice(0, 200)}` : ''}`;
    assert.ok(res.status < 500, `${where}: ${res.status} ${res.text.slice(0, 300)}`);
    assert.ok(op.responses?.[String(res.status)], `${where}: ${res.status} is not documented for ${method} ${path} (${res.text.slice(0, 200)})`);
    assert.match(res.contentType, /^application\/json/, `${where}: ${res.status} ${res.contentType}`);
    const body = JSON.parse(res.text) as { status?: unknown; message?: unknown; code?: unknown; errors?: unknown };
    if (res.status >= 400) {
      assert.equal(body.status, false, `${where}: ${res.text.slice(0, 200)}`);
      assert.equal(typeof body.message, 'string', where);
      assert.match(String(body.code), /^[a-z0-9_]+$/, `${where}: code ${String(body.code)}`);
      assert.equal(body.errors !== undefined, res.status === 422, `${where}: errors only on 422: ${res.text.slice(0, 200)}`);
    } else {
      assert.equal(body.status, true, `${where}: ${res.text.slice(0, 200)}`);
    }
    for (const m of markers) assert.ok(!res.text.includes(m), `${where}: tenant B's data in the answer`);
  }

  test('every documented operation: no 5xx, the contract shape, documented statuses, nothing of B seen or changed', async (t) => {
    t.diagnostic(`fuzz seed ${SEED} (replay: FUZZ_SEED=${SEED}), ${RUNS} runs per operation`);
    console.log(`fuzz seed ${SEED} (replay: FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS})`);
    const before = await snapshotOfB();
    const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method]) => ['get', 'post', 'put', 'delete', 'patch'].includes(method))
        .map(([method, op]) => ({ path, method, op })),
    );
    assert.ok(operations.length > 50, `only ${operations.length} operations in the document`);
    let sent = 0;
    const statuses = new Map<number, number>();
    const succeeded = new Set<string>();
    for (const [i, { path, method, op }] of operations.entries()) {
      if (SKIPPED.has(`${method} ${path}`) || !`${method.toUpperCase()} ${path}`.includes(ONLY)) continue;
      try {
        await fc.assert(
          fc.asyncProperty(requestArbitrary(path, method, op), async (r) => {
            sent++;
            const res = await send(method, r);
            if (process.env.FUZZ_DEBUG) console.log(res.status, r.body?.slice(0, 150));
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
            if (res.status < 300) succeeded.add(`${method} ${path}`);
            check(path, method, op, r, res);
          }),
          { seed: SEED + i, numRuns: RUNS, endOnFailure: true },
        );
      } catch (err) {
        const cause = (err as { cause?: { message?: string } }).cause?.message ?? '';
        throw new Error(`${method.toUpperCase()} ${path} (operation ${i}, seed ${SEED}): ${cause.slice(0, 600)}\n${(err as Error).message.slice(0, 1500)}`);
      }
    }
    const histogram = [...statuses].sort(([x], [y]) => x - y).map(([status, n]) => `${status}×${n}`).join(' ');
    t.diagnostic(`${sent} requests over ${operations.length - SKIPPED.size} operations (${succeeded.size} answered 2xx at least once): ${histogram}`);
    assert.deepEqual(await snapshotOfB(), before, "tenant B's own reads changed");
  });
});
