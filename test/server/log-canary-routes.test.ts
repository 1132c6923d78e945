/**
 * Canary values in every route, found in no log line. A real server process runs at
 * LOG_LEVEL=trace (its whole stdout and stderr are kept, the worker's lines included), on each
 * database. Every operation of its live OpenAPI document (read at run time, so a new route is
 * covered without touching this file) gets requests carrying canaries — a password, a token, a
 * patient name, an address and note text — wherever they fit: JSON bodies built from the
 * operation's schema, query parameters, path parameters, the Authorization header and an extra
 * header; with the caller's own token and ids (many succeed) and with a forged token, malformed
 * JSON and wrong types (they fail). Then the sync socket (a forged hello, a real session with
 * canary mutations, a rejected one and a malformed frame) and `POST /sync/mutations`.
 * Afterwards no canary may appear anywhere in the output.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { WebSocket } from 'ws';
import { forEachBackend, seedPgliteDataDir, type TestDatabase } from '../helpers/backends.ts';
import { killAllServers, spawnServer, type ServerProcess } from '../helpers/processes.ts';
import { API, newAccount, RATE_LIMITS_OFF } from '../helpers/test-server.ts';
import { resolver, type JsonSchema } from './fuzz/arbitraries.ts';

const tag = Math.random().toString(36).slice(2, 8);
/** Each canary is one word, so it is found whole even inside a URL-encoded or quoted log line. */
const CANARY = {
  password: `Pwcanary${tag}Secret9`,
  token: `Tokcanary${tag}Bearer`,
  name: `Namecanary${tag}`,
  lastName: `Surcanary${tag}`,
  address: `Addrcanary${tag}Street`,
  note: `Notecanary${tag}Knee`,
} as const;
const ALL = Object.values(CANARY);

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  schema?: JsonSchema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
}
interface Ids {
  patient: string;
  referral: string;
  visit: string;
}

/** The canary a string member of this name carries. */
function canaryFor(name: string): string {
  const n = name.toLowerCase();
  if (n.includes('password')) return CANARY.password;
  if (n.includes('token') || n.includes('code') || n.includes('secret')) return CANARY.token;
  if (n.includes('last')) return CANARY.lastName;
  if (n.includes('name')) return CANARY.name;
  if (n.includes('address') || n.includes('street') || n.includes('city')) return CANARY.address;
  return CANARY.note;
}

/** An id of ours for a path or body member of this name. */
function idFor(name: string, ids: Ids): string {
  const n = name.toLowerCase();
  if (n.includes('referral')) return ids.referral;
  if (n.includes('patient')) return ids.patient;
  return ids.visit;
}

/**
 * A value that follows `schema` where a rule pins the shape (formats, enums, numbers, ids) and
 * carries a canary in every free-text string, so the request mostly reaches the service.
 */
function canaryValue(schema: JsonSchema, resolve: (s: JsonSchema) => JsonSchema, ids: Ids, name = '', depth = 0): unknown {
  const s = resolve(schema);
  if (depth > 6) return null;
  if (s.const !== undefined) return s.const;
  if (s.enum?.length) return s.enum[0];
  const alt = s.anyOf ?? s.oneOf;
  if (alt?.length) {
    const pick = alt.map(resolve).find((x) => x.type !== 'null') ?? alt[0];
    return canaryValue(pick as JsonSchema, resolve, ids, name, depth + 1);
  }
  if (s.allOf?.length) return Object.assign({}, ...s.allOf.map((x) => canaryValue(x, resolve, ids, name, depth + 1)));
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  switch (type) {
    case 'object':
    case undefined: {
      if (!s.properties) return type === 'object' ? {} : CANARY.note;
      return Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, canaryValue(v, resolve, ids, k, depth + 1)]));
    }
    case 'array':
      return s.items ? [canaryValue(s.items, resolve, ids, name, depth + 1)] : [];
    case 'integer':
    case 'number':
      return s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 1);
    case 'boolean':
      return true;
    case 'string': {
      if (s.format === 'uuid') return idFor(name, ids);
      if (s.format === 'email') return `canary.reader.${tag}@example.org`;
      if (s.format === 'date') return '2026-06-01';
      if (s.format === 'date-time') return new Date().toISOString();
      if (s.format === 'uri') return 'https://example.org/x';
      if (s.pattern && /\\d\{2\}:|HH|\[0-9\]\{2\}:/.test(s.pattern)) return '09:00';
      const value = canaryFor(name);
      return s.maxLength !== undefined && value.length > s.maxLength ? value.slice(0, s.maxLength) : value;
    }
    default:
      return CANARY.note;
  }
}

/** The same shape with every member a canary string: a 422 carrying all of them. */
function wrongTypes(value: unknown, name = ''): unknown {
  if (Array.isArray(value)) return value.map((v) => wrongTypes(v, name));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, wrongTypes(v, k)]));
  if (typeof value === 'string') return { nested: canaryFor(name) };
  return canaryFor(name);
}

forEachBackend('logs: canaries in every route', (backend) => {
  let server: ServerProcess;
  let base: string;
  let db: TestDatabase | null = null;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-canary-'));
  let token: string;
  let ids: Ids;
  let sent = 0;

  async function call(method: string, pathname: string, opts: { token?: string | null; body?: string; query?: string; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { accept: 'application/json', 'x-visit-note': CANARY.note, ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.body !== undefined) headers['content-type'] ??= 'application/json';
    sent++;
    const res = await fetch(`${base}${pathname}${opts.query ? `?${opts.query}` : ''}`, { method, headers, ...(opts.body !== undefined ? { body: opts.body } : {}) });
    const text = await res.text();
    return { status: res.status, text };
  }
  const json = (v: unknown) => JSON.stringify(v);

  before(async () => {
    db = backend.name === 'postgres' ? await backend.open() : null;
    if (!db) await seedPgliteDataDir(path.join(dataDir, 'pgdata'));
    server = spawnServer({
      FIELDCHART_DATA_DIR: dataDir,
      LOG_LEVEL: 'trace',
      ...(db?.url ? { DATABASE_URL: db.url } : {}),
      ...RATE_LIMITS_OFF,
    });
    base = await server.url(120_000);
    // A clinician whose password and names are canaries, with a patient and a visit of their own.
    const account = newAccount({ first_name: CANARY.name, last_name: CANARY.lastName, password: CANARY.password });
    const reg = await call('POST', `${API}/register`, { body: json(account) });
    assert.equal(reg.status, 200, reg.text);
    token = JSON.parse(reg.text).data.token;
    assert.equal((await call('PUT', `${API}/my-settings`, { token, body: json({ time_zone: 'UTC' }) })).status, 200);
    const patient = await call('POST', `${API}/patient/create`, { token, body: json({ first_name: CANARY.name, last_name: CANARY.lastName, address: `12 ${CANARY.address}, Chicago, IL 60614` }) });
    assert.equal(patient.status, 200, patient.text);
    const p = JSON.parse(patient.text).data;
    const visit = await call('POST', `${API}/schedule-visit-request-save`, { token, body: json({ patient_uuid: p.uuid, visit_date: '2026-06-01', start_time: '09:00', notes: CANARY.note }) });
    assert.equal(visit.status, 200, visit.text);
    ids = { patient: p.uuid, referral: p.referral_uuid, visit: JSON.parse(visit.text).data.uuid };
    const note = await call('POST', `${API}/patient-referral-end-visit-note`, { token, body: json({ schedule_uuid: ids.visit, subjective: CANARY.note, objective: CANARY.note, assessment: 'a', plan: 'p' }) });
    assert.equal(note.status, 200, note.text);
    // Sign-in: right and wrong passwords.
    assert.equal((await call('POST', `${API}/sign-in`, { body: json({ email: account.email, password: CANARY.password }) })).status, 200);
    assert.equal((await call('POST', `${API}/sign-in`, { body: json({ email: account.email, password: `${CANARY.password}x` }) })).status, 401);
  });
  after(async () => {
    await killAllServers();
    await db?.drop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  test('every operation of the OpenAPI document, the sync socket and POST /sync/mutations: no canary in any log line', async (t) => {
    const doc = JSON.parse((await call('GET', `${API}/openapi.json`)).text) as { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, JsonSchema> } };
    const resolve = resolver(doc.components.schemas);
    const operations = Object.entries(doc.paths).flatMap(([p, item]) =>
      Object.entries(item)
        .filter(([method]) => ['get', 'post', 'put', 'delete', 'patch'].includes(method))
        .map(([method, op]) => ({ path: p, method: method.toUpperCase(), op })),
    );
    assert.ok(operations.length > 50, `only ${operations.length} operations`);
    // These end the session the rest of the run uses; they go last.
    const last = new Set(['/logout', '/delete-account'].map((p) => `${API}${p}`));
    operations.sort((x, y) => Number(last.has(x.path)) - Number(last.has(y.path)));
    // The sync channel first: the operations below end with /logout and /delete-account.
    await syncSocketCanaries();
    await httpMutationCanaries();
    const statuses = new Map<number, number>();
    const count = (status: number) => statuses.set(status, (statuses.get(status) ?? 0) + 1);
    for (const { path: template, method, op } of operations) {
      const params = op.parameters ?? [];
      const fill = (value: (p: Parameter) => string) =>
        params.filter((p) => p.in === 'path').reduce((acc, p) => acc.replace(`{${p.name}}`, encodeURIComponent(value(p))), template);
      const query = (value: (p: Parameter) => string) =>
        params.filter((p) => p.in === 'query').map((p) => `${p.name}=${encodeURIComponent(value(p))}`).concat(`q=${encodeURIComponent(CANARY.name)}`).join('&');
      const bodySchema = op.requestBody?.content?.['application/json']?.schema;
      const hasBody = method === 'POST' || method === 'PUT' || method === 'PATCH';
      const fitting = bodySchema ? canaryValue(bodySchema, resolve, ids) : { note: CANARY.note, password: CANARY.password };
      const own = (p: Parameter) =>
        resolve(p.schema ?? {}).format === 'uuid' || /uuid|id$/i.test(p.name) ? idFor(p.name, ids) : String(canaryValue(p.schema ?? { type: 'string' }, resolve, ids, p.name));
      // 1: our own token and ids, a body that follows the schema with canaries in its text.
      count((await call(method, fill(own), { token, query: query(own), ...(hasBody ? { body: json(fitting) } : {}) })).status);
      // 2: a forged token that is a canary, canaries in path and query.
      const canaryParam = (p: Parameter) => canaryFor(p.name);
      count((await call(method, fill(canaryParam), { token: CANARY.token, query: query(canaryParam), ...(hasBody ? { body: json(fitting) } : {}) })).status);
      if (hasBody) {
        // 3: wrong types everywhere (422), and 4: malformed JSON (400), both carrying canaries.
        count((await call(method, fill(own), { token, body: json(wrongTypes(fitting)) })).status);
        count((await call(method, fill(own), { token, body: `${json(fitting).slice(0, -1)},"${CANARY.password}":` })).status);
        // 5: canaries in an Idempotency-Key and a cookie.
        count((await call(method, fill(own), { token, body: json(fitting), headers: { 'idempotency-key': CANARY.token, cookie: `session=${CANARY.token}` } })).status);
      }
    }
    const histogram = [...statuses].sort(([x], [y]) => x - y).map(([s, n]) => `${s}×${n}`).join(' ');
    t.diagnostic(`${sent} requests over ${operations.length} operations: ${histogram}`);
    assert.ok([...statuses.keys()].some((s) => s < 300), 'some requests succeeded');
    assert.ok([...statuses.keys()].some((s) => s >= 400 && s < 500), 'some requests failed');

    await server.stop();
    const output = server.stdout() + server.stderr();
    const lines = server.logs();
    // The capture works: trace-level lines for the requests are there.
    const requestLines = lines.filter((l) => l.req && l.msg === 'incoming request').length;
    assert.ok(requestLines >= sent * 0.9, `only ${requestLines} request lines for ${sent} requests`);
    assert.ok(lines.some((l) => l.level === 10 || l.level === 20), 'trace or debug lines were written');
    // Request lines name the route pattern, so a path parameter never reaches the log.
    assert.ok(lines.some((l) => l.req?.path === `${API}/visit-details/:scheduleUuid`), 'request lines carry the route pattern');
    const leaks = output.split('\n').filter((line) => ALL.some((c) => line.includes(c)));
    assert.deepEqual(leaks.map((l) => l.slice(0, 400)), [], `${leaks.length} log lines carry a canary`);
  });

  async function syncSocketCanaries(): Promise<void> {
    const url = `${base.replace(/^http/, 'ws')}${API}/sync`;
    const open = () =>
      new Promise<{ ws: WebSocket; messages: Array<Record<string, unknown>>; closed: Promise<number> }>((resolve, reject) => {
        const ws = new WebSocket(url, { headers: { 'x-visit-note': CANARY.note } });
        const messages: Array<Record<string, unknown>> = [];
        ws.on('message', (d) => messages.push(JSON.parse(String(d))));
        const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
        ws.once('open', () => resolve({ ws, messages, closed }));
        ws.once('error', reject);
      });
    const waitFor = async (messages: Array<Record<string, unknown>>, pred: (m: Record<string, unknown>) => boolean) => {
      const deadline = Date.now() + 15_000;
      while (!messages.some(pred)) {
        assert.ok(Date.now() < deadline, `no matching sync message; got ${messages.map((m) => m.type).join(',')}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    // A forged hello: refused, the socket closed.
    const forged = await open();
    forged.ws.send(json({ type: 'hello', protocol: 1, token: CANARY.token, client_id: randomUUID(), cursor: null }));
    assert.ok((await forged.closed) >= 4000);
    // A malformed first frame.
    const junk = await open();
    junk.ws.send(`{"type":"hello","token":"${CANARY.token}","note":"${CANARY.note}"`);
    await junk.closed;
    // A real session: a patient with canary name and address, a rejected mutation, a bad frame.
    const s = await open();
    s.ws.send(json({ type: 'hello', protocol: 1, token, client_id: randomUUID(), cursor: null }));
    await waitFor(s.messages, (m) => m.type === 'welcome');
    const now = new Date().toISOString();
    const patient = randomUUID();
    s.ws.send(json({ type: 'mutation', mutation_id: 1, name: 'patient.create', args: { uuid: patient, first_name: CANARY.name, last_name: CANARY.lastName, address: CANARY.address }, client_time: now }));
    s.ws.send(json({ type: 'mutation', mutation_id: 2, name: 'visit.schedule', args: { uuid: randomUUID(), patient_uuid: patient, visit_date: '2026-06-03', start_time: '10:00', notes: CANARY.note }, client_time: now }));
    s.ws.send(json({ type: 'mutation', mutation_id: 3, name: 'visit.schedule', args: { patient_uuid: CANARY.name, visit_date: CANARY.note, start_time: CANARY.address }, client_time: now }));
    s.ws.send(json({ type: 'mutation', mutation_id: 4, name: `patient.${CANARY.name}`, args: { password: CANARY.password }, client_time: now }));
    for (const id of [1, 2]) await waitFor(s.messages, (m) => m.type === 'ack' && m.mutation_id === id);
    await waitFor(s.messages, (m) => (m.type === 'reject' || m.type === 'error') && (m.mutation_id === 3 || m.mutation_id === undefined));
    s.ws.send(`{"type":"mutation","mutation_id":5,"args":{"note":"${CANARY.note}"`);
    s.ws.send(json({ type: CANARY.note, token: CANARY.token }));
    await Promise.race([s.closed, new Promise((r) => setTimeout(r, 500))]);
    s.ws.close(1000);
    await s.closed;
  }

  async function httpMutationCanaries(): Promise<void> {
    const now = new Date().toISOString();
    const good = await call('POST', `${API}/sync/mutations`, {
      token,
      body: json({ client_id: randomUUID(), mutations: [{ mutation_id: 1, name: 'patient.create', args: { uuid: randomUUID(), first_name: CANARY.name, last_name: CANARY.lastName, address: CANARY.address }, client_time: now }] }),
    });
    assert.equal(good.status, 200, good.text);
    const rejected = await call('POST', `${API}/sync/mutations`, {
      token,
      body: json({ client_id: randomUUID(), mutations: [{ mutation_id: 1, name: 'visit.schedule', args: { patient_uuid: CANARY.name, notes: CANARY.note }, client_time: now }] }),
    });
    assert.ok(rejected.status < 500, rejected.text);
    const forged = await call('POST', `${API}/sync/mutations`, { token: CANARY.token, body: json({ client_id: CANARY.name, mutations: [{ password: CANARY.password }] }) });
    assert.equal(forged.status, 401);
  }
});
