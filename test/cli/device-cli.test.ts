/**
 * `fieldchart device list|revoke` as operators run them (a child process on the live
 * PostgreSQL database next to a running server): a connected device's socket closes with
 * 4411 when the command revokes it, the revocation is audited, and bad input exits non-zero
 * having changed nothing. The in-process operation is tested with the real client library
 * (test/client-lib/device-revocation.test.ts); this checks the command line on top of it.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { CLOSE_CODES } from '@fieldchart/schema/sync';
import { operationContext, runOperation } from '@fieldchart/server';
import { backends } from '../helpers/backends.ts';
import { cliJson, runCli } from '../helpers/processes.ts';
import { helloSync, nextFeed } from '../helpers/sync-socket.ts';
import { registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';

const pgBackend = backends.find((b) => b.name === 'postgres');

describe('fieldchart device on PostgreSQL', { skip: pgBackend ? false : 'TEST_DATABASE_URL is not set' }, () => {
  let server: TestServer;
  let env: Record<string, string>;
  before(async () => {
    if (!pgBackend) return;
    server = await startTestServer(pgBackend);
    env = { DATABASE_URL: server.db.url ?? '', FIELDCHART_DATA_DIR: server.dataDir };
  });
  after(async () => {
    await server?.close();
  });
  const operation = (name: string, args: Record<string, unknown>) => runOperation(operationContext(server.runtime.services, server.runtime.database), name, args);

  test('device list shows a user’s devices; device revoke closes the connected one with 4411, audited; bad input changes nothing', async () => {
    const user = await registerUser(server);
    const [kept, lost] = [randomUUID(), randomUUID()];
    // Each device with its own session, as the client library signs in: revoking one device
    // ends the sessions it used.
    const lostSignIn = await server.api('POST', '/sign-in', { body: { email: user.email, password: user.password } });
    assert.equal(lostSignIn.status, 200, JSON.stringify(lostSignIn.body));
    const lostToken = lostSignIn.body.data.token as string;
    const keptSocket = await helloSync(server, user.token, kept);
    await nextFeed(keptSocket.socket);
    const lostSocket = await helloSync(server, lostToken, lost);
    await nextFeed(lostSocket.socket);

    const listed = await cliJson(['device', 'list', '--user', user.email], env);
    assert.equal(listed.user, user.email);
    assert.deepEqual(
      listed.items.map((d: { client_id: string; revoked_at: string | null }) => [d.client_id, d.revoked_at]),
      [
        [kept, null],
        [lost, null],
      ],
    );

    const unknown = await runCli(['device', 'revoke', randomUUID(), '--user', user.email], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /No device/);
    // Not a client id: refused by the operation's own schema, before any database work.
    await assert.rejects(operation('device.revoke', { client_id: 'not-a-client-id' }), /client id/);

    const text = await runCli(['device', 'revoke', lost, '--user', user.email], env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`^Revoked device ${lost} for ${user.email.replace(/[.+]/g, '\\$&')}`));
    const late = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the revoked socket was not closed within 10 s')), 10_000).unref());
    assert.equal((await Promise.race([lostSocket.socket.closed, late])).code, CLOSE_CODES.device_revoked);

    const after = (await operation('device.list', { user: user.uuid })) as { items: { client_id: string; revoked_at: string | null }[] };
    assert.deepEqual(
      after.items.map((d) => [d.client_id, d.revoked_at !== null]),
      [
        [kept, false],
        [lost, true],
      ],
    );
    const audit = await server.runtime.database.db.execute(
      sql`select action, outcome, details from audit_log where resource_type = 'sync_device' and resource_id = ${lost}`,
    );
    const rows = (Array.isArray(audit) ? audit : (audit as { rows: unknown[] }).rows) as { action: string; outcome: string; details: { op: string } }[];
    assert.deepEqual(rows.map((r) => [r.action, r.outcome, r.details.op]), [['update', 'success', 'revoke']]);

    // The revoked device's session is over on the REST API; the user's other device is still open.
    const refused = await server.api('GET', '/my-profile', { token: lostToken });
    assert.deepEqual([refused.status, refused.body], [401, { status: false, message: 'This device was revoked', code: 'device_revoked' }]);
    assert.equal((await server.api('GET', '/my-profile', { token: user.token })).status, 200);
    assert.equal(keptSocket.socket.ws.readyState, keptSocket.socket.ws.OPEN);
    keptSocket.socket.close();
  });
});
