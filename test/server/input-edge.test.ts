/**
 * Issue 9's findings, one by one: every input gets a clear answer in the contract's shape —
 * NUL and lone surrogates in text, dates outside 1900–2100, overlong path parameters, header
 * blocks over Node's limit, a body trickled a byte at a time, any string at /token/refresh,
 * an invitation addressed to someone else, and a database data error that slips past zod.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import Fastify from 'fastify';
import { sql } from 'drizzle-orm';
import { installErrorHandling } from '../../server/src/http/error-handler.ts';
import { forEachBackend } from '../helpers/backends.ts';
import { registerUser, startTestServer, type ApiResponse, type TestServer } from '../helpers/test-server.ts';
import { createPatient, gps, scheduleVisit, utcClinician } from './visits/visit-fixtures.ts';
import { orgWithAdmin } from './organizations/org-fixtures.ts';

const REQUEST_TIMEOUT_MS = 2500;
const NUL = 'a\u0000b';
const LONE = 'ab\uD800c';

/** The contract's error body, with nothing of `sent` echoed back. */
function assertContractError(res: ApiResponse, status: number, code?: string, sent: string[] = []): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body?.status, false, JSON.stringify(res.body));
  assert.equal(typeof res.body.message, 'string');
  assert.equal(typeof res.body.code, 'string');
  if (code) assert.equal(res.body.code, code);
  const text = JSON.stringify(res.body);
  for (const s of sent) assert.ok(!text.includes(s), `echoed ${s.slice(0, 40)}`);
}

/** Raw HTTP/1.1 over a socket: what fetch cannot send (oversized headers, a trickled body). */
function rawRequest(port: number, head: string, opts: { trickle?: { bytes: number; everyMs: number }; timeoutMs?: number } = {}) {
  return new Promise<{ text: string; closedAfterMs: number }>((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    let timer: NodeJS.Timeout | undefined;
    const deadline = setTimeout(() => {
      socket.destroy();
      reject(new Error(`socket still open after ${opts.timeoutMs ?? 20_000} ms; got ${JSON.stringify(text.slice(0, 200))}`));
    }, opts.timeoutMs ?? 20_000);
    socket.setEncoding('utf8');
    socket.on('data', (d) => (text += d));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(deadline);
      clearInterval(timer);
      resolve({ text, closedAfterMs: Date.now() - started });
    });
    socket.write(head);
    if (opts.trickle) timer = setInterval(() => socket.writable && socket.write('a'), opts.trickle.everyMs);
  });
}

function parseRaw(text: string): { status: number; body: any } {
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
  const body = text.slice(text.indexOf('\r\n\r\n') + 4);
  return { status, body: body ? JSON.parse(body) : null };
}

forEachBackend('input edge (issue 9)', (backend) => {
  let server: TestServer;
  let port: number;
  before(async () => {
    server = await startTestServer(backend, {
      env: { REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS), HEADERS_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) },
    });
    port = Number(new URL(server.url).port);
  });
  after(() => server?.close());

  test('NUL and lone surrogates in text fields are a 422 naming the field, and change nothing', async () => {
    const u = await registerUser(server);
    for (const bad of [NUL, LONE]) {
      const cases: Array<[string, string, Record<string, unknown>, string, string | null]> = [
        ['POST', '/sign-in', { email: `x${bad}@example.test`, password: 'whatever-long' }, 'email', null],
        ['POST', '/sign-in', { email: 'x@example.test', password: `p${bad}assword` }, 'password', null],
        ['POST', '/register', { first_name: bad, last_name: 'L', email: `n${Date.now()}@example.test`, password: 'Passw0rd-long', password_confirmation: 'Passw0rd-long' }, 'first_name', null],
        ['PUT', '/update-basic-info', { first_name: bad }, 'first_name', u.token],
        ['PUT', '/update-basic-info', { phone: bad }, 'phone', u.token],
        ['PUT', '/update-basic-info', { address: bad }, 'address', u.token],
        ['POST', '/patient/create', { first_name: 'A', last_name: 'B', referral: { referral_source: bad } }, 'referral.referral_source', u.token],
        ['POST', '/patient/create', { first_name: 'A', last_name: 'B', referral: { discipline: bad } }, 'referral.discipline', u.token],
        ['POST', '/organizations/request', { name: bad, type: 'clinic' }, 'name', u.token],
        ['POST', '/organizations/invite', { organization_name: bad, contact_email: 'c@example.test' }, 'organization_name', u.token],
        ['POST', '/organizations/invite', { organization_name: 'Org', contact_email: 'c@example.test', message: bad }, 'message', u.token],
        ['POST', '/complete-onboarding', { discipline: 'PT', license_number: bad }, 'license_number', u.token],
      ];
      for (const [method, path, body, field, token] of cases) {
        const res = await server.api(method, path, { body, token });
        assertContractError(res, 422, 'validation_failed', [bad]);
        assert.ok(res.body.errors?.[field], `${path} ${field}: ${JSON.stringify(res.body.errors)}`);
      }
    }
    // In a query string: NUL is a 422; bytes that are not UTF-8 decode to U+FFFD, harmless.
    assertContractError(await server.api('GET', `/organizations?search=${encodeURIComponent(NUL)}`, { token: u.token }), 422, 'validation_failed', [NUL]);
    assert.equal((await server.api('GET', '/organizations?search=a%ED%A0%80b', { token: u.token })).status, 200);
    const me = await server.api('GET', '/my-profile', { token: u.token });
    assert.deepEqual([me.body.data.first_name, me.body.data.phone, me.body.data.needs_onboarding], [u.first_name, null, true]);
    const patients = await server.api('GET', '/patient/my-patients', { token: u.token });
    assert.equal(patients.body.meta.total, 0);
  });

  test('dates and timestamps outside 1900–2100, or with offsets beyond ±14:00, are a 422', async () => {
    const u = await utcClinician(server);
    const patient = await createPatient(server, u);
    const visit = await scheduleVisit(server, u, { patient_uuid: patient.uuid, visit_date: '2026-06-01', start_time: '09:00' });
    const badTimes = ['0000-01-01T00:00:00Z', '9999-12-31T23:59:59-23:59', '2026-06-01T09:00:00+15:00', '1899-12-31T23:59:59Z', '2026-02-30T10:00:00Z'];
    for (const event_time of badTimes) {
      const res = await server.api('POST', '/visit-timer-events', { token: u.token, body: { schedule_uuid: visit, events: [{ event_type: 'start_travel', event_time, ...gps }] } });
      assertContractError(res, 422, 'validation_failed');
      assert.ok(res.body.errors['events.0.event_time'], JSON.stringify(res.body.errors));
      const mileage = await server.api('PUT', `/visit/${visit}/mileage`, { token: u.token, body: { total_miles: 3, recorded_at: event_time } });
      assertContractError(mileage, 422, 'validation_failed');
      assert.ok(mileage.body.errors.recorded_at);
    }
    const gets: Array<[string, string]> = [
      ['/get-upcomming-visits?filter=week&filter_date=9999-12-31', 'filter_date'],
      ['/get-upcomming-visits?filter=month&filter_date=0000-01-01', 'filter_date'],
      ['/reports/time-saved?to=0001-01-05', 'to'],
      ['/reports/summary?from=0000-01-01&to=0000-12-31', 'from'],
    ];
    for (const [path, field] of gets) {
      const res = await server.api('GET', path, { token: u.token });
      assertContractError(res, 422, 'validation_failed');
      assert.ok(res.body.errors[field], `${path}: ${JSON.stringify(res.body.errors)}`);
    }
    const year = await server.api('POST', `/patient/get-scheduled-visits/${patient.referral_uuid}`, { token: u.token, body: { filter_year: '0000' } });
    assertContractError(year, 422, 'validation_failed');
    const soc = await server.api('POST', '/patient/create', { token: u.token, body: { first_name: 'A', last_name: 'B', referral: { start_of_care: '0000-01-01' } } });
    assertContractError(soc, 422, 'validation_failed');
    assert.ok(soc.body.errors['referral.start_of_care']);

    // The edges themselves are fine, and a window computed from the last day stays a date.
    for (const filter of ['week', 'month']) {
      assert.equal((await server.api('GET', `/get-upcomming-visits?filter=${filter}&filter_date=2100-12-31`, { token: u.token })).status, 200);
    }
    assert.equal((await server.api('GET', '/reports/summary?from=1900-01-01&to=1900-12-31', { token: u.token })).status, 200);
    assert.equal((await server.api('GET', '/reports/summary?from=2100-01-01&to=2100-12-31', { token: u.token })).status, 200);
    assert.equal((await server.api('GET', '/reports/time-saved?to=1900-01-05', { token: u.token })).status, 200);
    const ok = await server.api('POST', '/visit-timer-events', {
      token: u.token,
      body: { schedule_uuid: visit, events: [{ event_type: 'start_travel', event_time: '2026-06-01T08:30:00.5-05:00', ...gps }] },
    });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
  });

  test('a path parameter of any length is the same 404 as an unknown id, in the contract shape, not echoed', async () => {
    const u = await registerUser(server);
    const unknown = await server.api('GET', `/visit-details/${crypto.randomUUID()}`, { token: u.token });
    assertContractError(unknown, 404);
    for (const id of ['x'.repeat(150), 'y'.repeat(5000), '%00', 'a%ZZb']) {
      const res = await server.api('GET', `/visit-details/${id}`, { token: u.token });
      assert.equal(res.status, 404, id.slice(0, 20));
      assertContractError(res, 404, undefined, [id.slice(0, 100)]);
      if (id.length < 2048 && !id.includes('%ZZ')) assert.deepEqual(res.body, unknown.body, id.slice(0, 20));
    }
    const chart = await server.api('GET', `/patient/chart-details/${'z'.repeat(300)}`, { token: u.token });
    assertContractError(chart, 404, 'referral_not_found');
  });

  test('431 for a header block or URL over the limit, in the contract shape', async () => {
    const bigHeader = `GET /api/therapist/v1/my-profile HTTP/1.1\r\nHost: x\r\nX-Pad: ${'h'.repeat(20_000)}\r\n\r\n`;
    const longUrl = `GET /api/therapist/v1/visit-details/${'u'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const manyHeaders = `GET /api/therapist/v1/my-profile HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 3000 }, (_, i) => `X-H${i}: v`).join('\r\n')}\r\n\r\n`;
    for (const head of [bigHeader, longUrl, manyHeaders]) {
      const { text } = await rawRequest(port, head);
      const res = parseRaw(text);
      assert.equal(res.status, 431, text.slice(0, 200));
      assert.deepEqual(res.body, { status: false, message: 'Request header fields too large', code: 'headers_too_large' });
    }
  });

  test(`a body trickled a byte every 400 ms is cut within REQUEST_TIMEOUT_MS (${REQUEST_TIMEOUT_MS}) with a 408`, async () => {
    const head = 'POST /api/therapist/v1/sign-in HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{';
    const { text, closedAfterMs } = await rawRequest(port, head, { trickle: { bytes: 1, everyMs: 400 }, timeoutMs: REQUEST_TIMEOUT_MS * 6 });
    // Node checks on an interval (≤ 1 s here); under load allow generous slack, never "never".
    assert.ok(closedAfterMs >= REQUEST_TIMEOUT_MS - 200 && closedAfterMs < REQUEST_TIMEOUT_MS * 5, `closed after ${closedAfterMs} ms`);
    if (text) {
      const res = parseRaw(text);
      assert.equal(res.status, 408, text.slice(0, 200));
      assert.equal(res.body.code, 'request_timeout');
    }
    // Headers that never finish are cut the same way.
    const slowHead = await rawRequest(port, 'GET /api/therapist/v1/my-profile HTTP/1.1\r\nHost: x\r\nX-Slow: ', {
      trickle: { bytes: 1, everyMs: 400 },
      timeoutMs: REQUEST_TIMEOUT_MS * 6,
    });
    assert.ok(slowHead.closedAfterMs < REQUEST_TIMEOUT_MS * 5, `closed after ${slowHead.closedAfterMs} ms`);
    // The server still answers.
    assert.equal((await server.request('GET', '/healthz')).status, 200);
  });

  test('/token/refresh: any string that is not a current refresh token is 401, whatever its length', async () => {
    const u = await registerUser(server);
    for (const refresh_token of [u.token, 'r'.repeat(5000), 'q'.repeat(200_000), NUL, LONE, 'short']) {
      const res = await server.api('POST', '/token/refresh', { body: { refresh_token } });
      assertContractError(res, 401, 'invalid_token', [refresh_token.slice(0, 50)]);
    }
    assertContractError(await server.api('POST', '/token/refresh', { body: {} }), 422, 'validation_failed');
    // The real one still works afterwards.
    assert.equal((await server.api('POST', '/token/refresh', { body: { refresh_token: u.refreshToken } })).status, 200);
  });

  test("an invitation addressed to someone else is a 404 even to an unverified caller; their own is 403 email_unverified", async () => {
    const org = await orgWithAdmin(server);
    const invitee = await registerUser(server);
    const stranger = await registerUser(server);
    const sent = await server.api('POST', '/my-organization/invitations', { token: org.admin.token, body: { email: invitee.email } });
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const list = await server.api('GET', '/my-organization/invitations', { token: org.admin.token });
    const inv = list.body.data.find((i: { email: string }) => i.email === invitee.email).uuid as string;
    for (const action of ['accept', 'decline']) {
      assertContractError(await server.api('POST', `/my-invitations/${inv}/${action}`, { token: stranger.token }), 404, 'invitation_not_found');
      assertContractError(await server.api('POST', `/my-invitations/${crypto.randomUUID()}/${action}`, { token: stranger.token }), 404, 'invitation_not_found');
      assertContractError(await server.api('POST', `/my-invitations/${inv}/${action}`, { token: invitee.token }), 403, 'email_unverified');
    }
  });

  test('a PostgreSQL data error (class 22) that slips past the schemas is a 422 naming no value', async () => {
    // A route with no schema at all, straight to the database: the second line of defence.
    const app = Fastify();
    installErrorHandling(app);
    const { db } = server.runtime.database;
    app.post('/echo', async (req) => {
      const { value, kind } = req.body as { value: string; kind: string };
      if (kind === 'text') await db.execute(sql`select ${value}::text as v`);
      else if (kind === 'date') await db.execute(sql`select ${value}::date as v`);
      else await db.execute(sql`select ${value}::int2 as v`);
      return { ok: true };
    });
    try {
      for (const [kind, value] of [['text', `secret${NUL}`], ['date', '0000-01-01'], ['int', '99999999']] as const) {
        const res = await app.inject({ method: 'POST', url: '/echo', payload: { kind, value } });
        const body = res.json();
        assert.equal(res.statusCode, 422, `${kind}: ${res.body}`);
        assert.equal(body.code, 'invalid_value');
        assert.ok(!res.body.includes(value.slice(0, 6)), res.body);
      }
    } finally {
      await app.close();
    }
  });
});
