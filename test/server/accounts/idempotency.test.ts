import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { newAccount, registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { orgWithAdmin } from '../organizations/org-fixtures.ts';
import {
  assertError,
  assertOk,
  assertTokenRefused,
  assertTokenWorks,
  countRows,
  query,
  errorFields,
  mailMark,
  refresh,
  resetCode,
  signIn,
  usersWithEmail,
} from './support.ts';

forEachBackend('accounts: idempotent retries', (backend) => {
  const clock = manualClock();
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend, { clock });
  });
  after(() => server?.close());

  const post = (path: string, key: string, body?: unknown, token?: string) =>
    server.api('POST', path, { headers: { 'idempotency-key': key }, ...(body !== undefined ? { body } : {}), ...(token ? { token } : {}) });

  test('/register repeated with the same key and body: one account, the first response replayed', async () => {
    const key = randomUUID();
    const account = newAccount();
    const first = await post('/register', key, account);
    assertOk(first);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const second = await post('/register', key, account);
    assertOk(second);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(second.body, first.body);
    assert.equal(second.body.data.user.uuid, first.body.data.user.uuid);
    assert.equal(await usersWithEmail(server, account.email), 1);
    assert.equal(await countRows(server, sql`select count(*)::int as n from sessions where user_id = ${first.body.data.user.uuid}::uuid`), 1);
    await assertTokenWorks(server, second.body.data.token, first.body.data.user.uuid);
  });

  test('a stored response is encrypted at rest: no token or email in the table', async () => {
    const key = randomUUID();
    const account = newAccount();
    const first = await post('/register', key, account);
    assertOk(first);
    const rows = await query<{ body: string }>(server, sql`select response_body as body from idempotency_keys where key = ${key}`);
    assert.equal(rows.length, 1);
    const stored = rows[0]!.body;
    assert.match(stored, /^fc1\./);
    for (const secret of [first.body.data.token, first.body.data.refresh_token, account.email]) {
      assert.ok(!stored.includes(secret), 'plaintext found in the stored response');
    }
  });

  test('the same key with another body is a 422 idempotency_key_reused, and does nothing', async () => {
    const key = randomUUID();
    const a = newAccount();
    const b = newAccount();
    assertOk(await post('/register', key, a));
    const reused = await post('/register', key, b);
    assertError(reused, 422, 'idempotency_key_reused');
    assert.deepEqual(errorFields(reused), ['Idempotency-Key']);
    assert.equal(await usersWithEmail(server, b.email), 0);
  });

  test('an error response is replayed too', async () => {
    const u = await registerUser(server);
    const key = randomUUID();
    const dup = newAccount({ email: u.email });
    const first = await post('/register', key, dup);
    assertError(first, 422, 'email_taken');
    const second = await post('/register', key, dup);
    assertError(second, 422, 'email_taken');
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(second.body, first.body);
  });

  test('/forgot-password/send-otp replayed sends one mail and answers the same flow token', async () => {
    const u = await registerUser(server);
    const key = randomUUID();
    const mark = mailMark(server);
    const first = await post('/forgot-password/send-otp', key, { email: u.email });
    assertOk(first);
    const second = await post('/forgot-password/send-otp', key, { email: u.email });
    assertOk(second);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
    assert.equal(second.body.data.token, first.body.data.token);
    assert.equal(await countRows(server, sql`select count(*)::int as n from mail_outbox where to_address = ${u.email}`), 1);
    assert.equal(await countRows(server, sql`select count(*)::int as n from password_resets where user_id = ${u.uuid}::uuid`), 1);
    const code = await resetCode(server, u.email, mark);
    assertOk(await server.api('POST', '/forgot-password/verify-otp', { body: { token: second.body.data.token, otp: code } }));
  });

  test('a throttled request releases its key: retried after the lockout with the same key, it really runs', async () => {
    const u = await registerUser(server);
    // The default OTP_SENDS_PER_EMAIL_PER_HOUR is 5: use them up without a key.
    for (let i = 0; i < 5; i++) assertOk(await server.api('POST', '/forgot-password/send-otp', { body: { email: u.email } }));
    const key = randomUUID();
    const throttled = await post('/forgot-password/send-otp', key, { email: u.email });
    assertError(throttled, 429, 'too_many_attempts');
    assert.ok(Number(throttled.headers.get('retry-after')) > 0);
    // Still locked out: answered afresh (with its Retry-After), not replayed.
    const again = await post('/forgot-password/send-otp', key, { email: u.email });
    assertError(again, 429, 'too_many_attempts');
    assert.equal(again.headers.get('idempotent-replayed'), null);
    assert.ok(Number(again.headers.get('retry-after')) > 0);
    clock.advance(3601);
    const later = await post('/forgot-password/send-otp', key, { email: u.email });
    assertOk(later);
    assert.equal(later.headers.get('idempotent-replayed'), null);
    assert.equal(await countRows(server, sql`select count(*)::int as n from password_resets where user_id = ${u.uuid}::uuid`), 6);
  });

  test('a retried /token/refresh gets the same pair and does not trip reuse detection', async () => {
    const u = await registerUser(server);
    const key = randomUUID();
    const first = await post('/token/refresh', key, { refresh_token: u.refreshToken });
    assertOk(first);
    const retry = await post('/token/refresh', key, { refresh_token: u.refreshToken });
    assertOk(retry);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(retry.body, first.body);
    await assertTokenWorks(server, first.body.data.token, u.uuid);
    assertOk(await refresh(server, first.body.data.refresh_token));
  });

  test('keys are scoped per user on authenticated routes', async () => {
    const a = await registerUser(server);
    const b = await registerUser(server);
    const key = randomUUID();
    assertOk(await post('/logout', key, undefined, a.token));
    // The same key and the same (empty) body from another user is that user's own request.
    const fromB = await post('/logout', key, undefined, b.token);
    assertOk(fromB);
    assert.equal(fromB.headers.get('idempotent-replayed'), null);
    await assertTokenRefused(server, a.token);
    await assertTokenRefused(server, b.token);

    const c = await registerUser(server, { email: a.email.replace('@', '+c@') });
    const change = { current_password: c.password, new_password: 'Fresh-password-123', new_password_confirmation: 'Fresh-password-123' };
    const first = await post('/change-password', key, change, c.token);
    assertOk(first);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    const again = await post('/change-password', key, change, c.token);
    assertOk(again);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assertOk(await signIn(server, c.email, 'Fresh-password-123'));
  });

  test('anonymous keys are scoped per route', async () => {
    const u = await registerUser(server);
    const key = randomUUID();
    assertOk(await post('/sign-in', key, { email: u.email, password: u.password }));
    const other = newAccount();
    const reg = await post('/register', key, other);
    assertOk(reg);
    assert.equal(reg.headers.get('idempotent-replayed'), null);
    assert.equal(await usersWithEmail(server, other.email), 1);
  });

  test('concurrent requests with one key create one account', async () => {
    const key = randomUUID();
    const account = newAccount();
    const results = await Promise.all([post('/register', key, account), post('/register', key, account), post('/register', key, account)]);
    const ok = results.filter((r) => r.status === 200);
    assert.ok(ok.length >= 1, JSON.stringify(results.map((r) => r.body)));
    for (const r of results) if (r.status !== 200) assertError(r, 409, 'idempotency_in_progress');
    for (const r of ok) assert.equal(r.body.data.user.uuid, ok[0]?.body.data.user.uuid);
    assert.equal(await usersWithEmail(server, account.email), 1);
  });

  test('a keyed create retried while the first is still running writes once: a retry may take over an unfinished claim, and the answer that commits second rolls its write back', async () => {
    const me = await registerUser(server);
    const key = randomUUID();
    const body = { first_name: 'Race', last_name: 'Twice', address: '1 Main St' };
    const results = await Promise.all(Array.from({ length: 4 }, () => post('/patient/create', key, body, me.token)));
    const ok = results.filter((r) => r.status === 200);
    assert.ok(ok.length >= 1, JSON.stringify(results.map((r) => r.body)));
    for (const r of results) if (r.status !== 200) assertError(r, 409, 'idempotency_in_progress');
    for (const r of ok) assert.equal(r.body.data.uuid, ok[0]?.body.data.uuid);
    const [row] = await query<{ n: number }>(server, sql`select count(*)::int as n from patients where owner_id = ${me.uuid}::uuid`);
    assert.equal(row?.n, 1, 'one patient');
    // Whoever lost the race never replaced the stored answer.
    const again = await post('/patient/create', key, body, me.token);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.body.data.uuid, ok[0]?.body.data.uuid);
  });

  test('a malformed key is a 422', async () => {
    for (const key of ['x'.repeat(256), 'has space', 'tab\tkey']) {
      const res = await post('/register', key, newAccount());
      assertError(res, 422, 'invalid_idempotency_key');
      assert.deepEqual(errorFields(res), ['Idempotency-Key']);
    }
  });

  test('after IDEMPOTENCY_TTL_SECONDS a key is new again', async () => {
    const key = randomUUID();
    const account = newAccount();
    assertOk(await post('/register', key, account));
    clock.advance(24 * 3600 + 1);
    const later = await post('/register', key, account);
    assertError(later, 422, 'email_taken');
    assert.equal(later.headers.get('idempotent-replayed'), null);
  });

  /** Each keyed create of the API: what it sends for a fresh user, and how its rows are counted. */
  const creates: Record<string, (me: Awaited<ReturnType<typeof registerUser>>) => Promise<{ body: Record<string, unknown>; rows: ReturnType<typeof sql> }>> = {
    '/patient/create': async (me) => ({
      body: { first_name: 'Cut', last_name: 'Write', address: '1 Main St' },
      rows: sql`select count(*)::int as n from patients where owner_id = ${me.uuid}::uuid`,
    }),
    '/schedule-visit-request-save': async (me) => {
      const patient = await server.api('POST', '/patient/create', { token: me.token, body: { first_name: 'Cut', last_name: 'Write', address: '1 Main St' } });
      assertOk(patient);
      return {
        body: { patient_uuid: patient.body.data.uuid, visit_date: '2026-12-01', start_time: '09:00' },
        rows: sql`select count(*)::int as n from visits where owner_id = ${me.uuid}::uuid`,
      };
    },
    // A retry that wrote twice would mail the patient twice.
    '/messages/send': async (me) => ({
      body: { patient_email: `cut.${randomUUID().slice(0, 8)}@example.test`, patient_name: 'Cut Write', body: 'See you Tuesday.' },
      rows: sql`select (select count(*)::int from conversations where owner_id = ${me.uuid}::uuid)
        + (select count(*)::int from mail_outbox where owner_id = ${me.uuid}::uuid) as n`,
    }),
    '/organizations/request': async (me) => ({
      body: { name: `Cut Write ${randomUUID().slice(0, 8)}`, type: 'clinic' },
      rows: sql`select count(*)::int as n from organizations where requested_by = ${me.uuid}::uuid`,
    }),
    '/organizations/invite': async (me) => {
      const email = `cut.${randomUUID().slice(0, 8)}@example.test`;
      return {
        body: { organization_name: `Cut Write ${randomUUID().slice(0, 8)}`, contact_email: email },
        rows: sql`select (select count(*)::int from organizations where requested_by = ${me.uuid}::uuid)
          + (select count(*)::int from mail_outbox where to_address = ${email}) as n`,
      };
    },
    '/my-organization/invitations': async (me) => {
      await orgWithAdmin(server, { admin: me });
      const email = `cut.${randomUUID().slice(0, 8)}@example.test`;
      return {
        body: { email, role: 'member' },
        rows: sql`select (select count(*)::int from invitations where invited_by = ${me.uuid}::uuid)
          + (select count(*)::int from mail_outbox where to_address = ${email}) as n`,
      };
    },
  };
  /**
   * Stands in for a server killed after its write and before recording the answer: while it is
   * on, recording any completed answer fails, and so does releasing the claim (as it does when
   * the database is gone or the process killed): the claim is left unfinished.
   */
  async function installCut(): Promise<{ on(): Promise<void>; off(): Promise<void>; remove(): Promise<void> }> {
    await query(server, sql`create table if not exists fc_test_cut (on_ boolean)`);
    await query(
      server,
      sql.raw(`create or replace function fc_test_cut_completion() returns trigger language plpgsql as $$
        begin
          if new.completed_at is not null and exists (select 1 from fc_test_cut) then raise exception 'cut'; end if;
          return new;
        end $$`),
    );
    await query(
      server,
      sql.raw(`create or replace function fc_test_cut_release() returns trigger language plpgsql as $$
        begin
          if exists (select 1 from fc_test_cut) then raise exception 'cut'; end if;
          return old;
        end $$`),
    );
    await query(server, sql`drop trigger if exists fc_test_cut_completion on idempotency_keys`);
    await query(server, sql`create trigger fc_test_cut_completion before update on idempotency_keys for each row execute function fc_test_cut_completion()`);
    await query(server, sql`drop trigger if exists fc_test_cut_release on idempotency_keys`);
    await query(server, sql`create trigger fc_test_cut_release before delete on idempotency_keys for each row execute function fc_test_cut_release()`);
    return {
      on: async () => void (await query(server, sql`insert into fc_test_cut values (true)`)),
      off: async () => void (await query(server, sql`delete from fc_test_cut`)),
      remove: async () => {
        await query(server, sql`drop trigger fc_test_cut_completion on idempotency_keys`);
        await query(server, sql`drop trigger fc_test_cut_release on idempotency_keys`);
      },
    };
  }

  const unfinished = async (key: string) => {
    const [claim] = await query<{ done: boolean }>(server, sql`select completed_at is not null as done from idempotency_keys where key = ${key}`);
    return claim?.done === false;
  };

  for (const [route, prepare] of Object.entries(creates)) {
    test(`${route}: a keyed create and its stored answer commit together; a cut between them writes nothing, the retry writes once`, async () => {
      const cut = await installCut();
      const me = await registerUser(server);
      const { body, rows } = await prepare(me);
      const before = await countRows(server, rows);
      const written = async () => (await countRows(server, rows)) - before;
      const key = randomUUID();
      try {
        await cut.on();
        const cutShort = await post(route, key, body, me.token);
        assert.ok(cutShort.status >= 500, `expected a 5xx, got ${cutShort.status}`);
        assert.equal(await written(), 0, 'the write committed without its answer');
        assert.ok(await unfinished(key), 'the cut left its claim unfinished');
      } finally {
        await cut.off();
      }
      // At once: the cut left its claim unfinished, and the retry takes it over (its write rolled
      // back with the cut) rather than answering 409 until the claim counts as abandoned.
      const retry = await post(route, key, body, me.token);
      assertOk(retry);
      const again = await post(route, key, body, me.token);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(again.body, retry.body);
      assert.equal(await written(), ['/messages/send', '/my-organization/invitations', '/organizations/invite'].includes(route) ? 2 : 1, 'one record (and its one mail)');
      await cut.remove();
    });
  }

  /**
   * The clinical writes that store the same thing however often they run: a visit for a fresh
   * user, the write, how its rows are counted, and what a second run answers.
   */
  const repeatable: Record<string, { method: 'POST' | 'PUT'; path: (visit: string) => string; body: (visit: string) => Record<string, unknown>; rows: (visit: string) => ReturnType<typeof sql>; rerun: number | string }> = {
    'timer events': {
      method: 'POST',
      path: () => '/visit-timer-events',
      body: (visit) => ({ schedule_uuid: visit, events: [{ event_type: 'start_travel', event_time: '2026-12-01T08:40:00Z', latitude: 41.9, longitude: -87.6, accuracy: 8 }] }),
      rows: (visit) => sql`select count(*)::int as n from timer_events where visit_id = ${visit}::uuid`,
      rerun: 200,
    },
    mileage: {
      method: 'PUT',
      path: (visit) => `/visit/${visit}/mileage`,
      body: () => ({ total_miles: 12.5, recorded_at: '2026-12-01T18:00:00Z' }),
      rows: (visit) => sql`select count(*)::int as n from visit_mileage where visit_id = ${visit}::uuid`,
      rerun: 200,
    },
    'the SOAP note': {
      method: 'POST',
      path: () => '/patient-referral-end-visit-note',
      body: (visit) => ({ schedule_uuid: visit, subjective: 's', objective: 'o', assessment: 'a', plan: 'p', vital_signs: { bp: '120/80' } }),
      rows: (visit) => sql`select count(*)::int as n from soap_notes where visit_id = ${visit}::uuid`,
      // The note was stored by the cut request: the visit has one, as it would 120 s later.
      rerun: 'note_already_submitted',
    },
  };
  for (const [what, r] of Object.entries(repeatable)) {
    test(`${what}: a write cut before its answer was stored is retried at once (not 409 for 120 s), and stored once`, async () => {
      const cut = await installCut();
      const me = await registerUser(server);
      const patient = await server.api('POST', '/patient/create', { token: me.token, body: { first_name: 'Cut', last_name: 'Write', address: '1 Main St' } });
      assertOk(patient);
      const visit = await server.api('POST', '/schedule-visit-request-save', { token: me.token, body: { patient_uuid: patient.body.data.uuid, visit_date: '2026-12-01', start_time: '09:00' } });
      assertOk(visit);
      const id = visit.body.data.uuid as string;
      const send = (key: string) => server.api(r.method, r.path(id), { token: me.token, headers: { 'idempotency-key': key }, body: r.body(id) });
      const key = randomUUID();
      try {
        await cut.on();
        const cutShort = await send(key);
        assert.ok(cutShort.status >= 500, `expected a 5xx, got ${cutShort.status}`);
        assert.equal(await countRows(server, r.rows(id)), 1, 'the write committed; its answer was lost');
        assert.ok(await unfinished(key), 'the cut left its claim unfinished');
      } finally {
        await cut.off();
      }
      const retry = await send(key);
      if (typeof r.rerun === 'number') assertOk(retry);
      else assertError(retry, 409, r.rerun);
      const again = await send(key);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.deepEqual(again.body, retry.body);
      assert.equal(await countRows(server, r.rows(id)), 1, 'stored once');
      await cut.remove();
    });
  }
});
