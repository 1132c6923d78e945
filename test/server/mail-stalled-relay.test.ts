/**
 * A relay that takes the connection and never greets (a hung SMTP server): the send gives up
 * at the transport's greeting timeout instead of holding its worker slot (nodemailer alone
 * waits 30 s for a greeting, 2 min to connect, 10 min on a silent socket: mail/transport.ts),
 * the mail is kept, and the retry delivers it once the relay answers — exactly once. The
 * timeout is shortened through the URL, whose options win over the transport's own; one test
 * waits out the transport's own 15 s.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../../server/src/db/database.ts';
import { forEachBackend, onEmbeddedBackend, type TestBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { startSilentRelay, type SilentRelay } from '../helpers/smtp-relay.ts';
import { newAccount, startTestServer, type TestServer } from '../helpers/test-server.ts';

const GREETING_MS = 400;

/** A server whose SMTP_URL is a silent relay (its `query` appended), and the relay. */
function withSilentRelay(backend: TestBackend, query: string): { relay(): SilentRelay; server(): TestServer } {
  let relay: SilentRelay;
  let server: TestServer;
  before(async () => {
    relay = await startSilentRelay();
    server = await startTestServer(backend, { env: { SMTP_URL: `${relay.url}${query}` } });
  });
  after(async () => {
    await server.close();
    await relay.close();
  });
  return { relay: () => relay, server: () => server };
}

async function mailRows(server: TestServer, to: string): Promise<Array<{ status: string; attempts: number; last_error: string | null }>> {
  return rowsOf(await server.runtime.database.db.execute(sql`select status, attempts, last_error from mail_outbox where lower(to_address) = lower(${to})`));
}

const received = (server: TestServer, to: string) => server.mail.messages.filter((m) => m.to.includes(to.toLowerCase())).length;

/** Asks for a password reset code; answers when its first try has failed on the greeting, and how long that took. */
async function firstTryFails(server: TestServer, timeoutMs: number): Promise<{ email: string; ms: number }> {
  const account = newAccount();
  assert.equal((await server.api('POST', '/register', { body: account })).status, 200);
  const asked = Date.now();
  assert.equal((await server.api('POST', '/forgot-password/send-otp', { body: { email: account.email } })).status, 200);
  await eventually(
    async () => {
      const [row] = await mailRows(server, account.email);
      assert.equal(row?.status, 'retrying', 'the first try failed');
      assert.match(String(row?.last_error), /greeting/i);
    },
    { timeoutMs },
  );
  assert.equal(received(server, account.email), 0);
  return { email: account.email, ms: Date.now() - asked };
}

forEachBackend('mail: a relay that never greets', (backend) => {
  const the = withSilentRelay(backend, `?greetingTimeout=${GREETING_MS}`);

  test('the send gives up at the greeting timeout; the mail is kept, and sent once when the relay answers', async () => {
    const server = the.server();
    const { email, ms } = await firstTryFails(server, 20_000);
    assert.ok(ms < 10_000, `the first try took ${ms} ms`);
    the.relay().answerWith(server.mail.url);
    const mail = await server.mail.waitFor(email, undefined, 30_000);
    assert.match(mail.subject, /code|password/i);
    await eventually(async () => assert.deepEqual((await mailRows(server, email)).map((r) => r.status), ['sent']), { timeoutMs: 10_000 });
    assert.ok((await mailRows(server, email))[0]!.attempts >= 2);
    assert.equal(received(server, email), 1, 'sent once');
  });
});

// The transport's own bound, not the URL's: one database is enough (nothing here is the database's).
onEmbeddedBackend('mail: a relay that never greets, under the transport’s own timeouts', (backend) => {
  const the = withSilentRelay(backend, '');

  test('the first try gives up after 15 s (nodemailer alone waits 30 s)', async () => {
    const { ms } = await firstTryFails(the.server(), 40_000);
    assert.ok(ms >= 14_000 && ms < 25_000, `the first try took ${ms} ms`);
  });
});
