/**
 * A device's standing at the sync channel, on a bare socket: a mutation from a device revoked
 * after its hello is not applied (the batch itself checks, under the row lock the revocation
 * takes — here no notification warns the socket first), a revoked device is refused at hello,
 * and a device that holds data of an organization seat that has ended is told to wipe it
 * (4412) until it comes back without a cursor.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import { patients } from '@fieldchart/schema/db';
import { CLOSE_CODES } from '@fieldchart/schema/sync';
import { forEachBackend } from '../../helpers/backends.ts';
import { helloSync, nextFeed, openSync, type SyncSocket } from '../../helpers/sync-socket.ts';
import { startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { utcClinician } from '../visits/visit-fixtures.ts';

forEachBackend('sync device standing', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  /** The close code, or a failure within 10 s rather than a hung test. */
  const closeCode = async (socket: SyncSocket) => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('the socket was not closed within 10 s')), 10_000)));
    try {
      return (await Promise.race([socket.closed, late])).code;
    } finally {
      clearTimeout(timer);
    }
  };

  const hello = async (token: string, clientId: string, cursor: string | null) => {
    const socket = await openSync(server);
    socket.send({ type: 'hello', protocol: 2, token, client_id: clientId, cursor });
    return socket;
  };

  test('a revoked device’s mutation is not applied, and its next hello is refused with 4411', async () => {
    const user = await utcClinician(server);
    const clientId = randomUUID();
    const { socket } = await helloSync(server, user.token, clientId);
    await nextFeed(socket);
    const db = server.runtime.database.db;
    // Revoked behind the socket's back: no notification, so only the batch's own check stands.
    await db.execute(sql`update sync_clients set revoked_at = now() where user_id = ${user.uuid} and client_id = ${clientId}`);
    const patientId = randomUUID();
    socket.send({ type: 'mutation', mutation_id: 1, name: 'patient.create', args: { uuid: patientId, first_name: 'Never', last_name: 'Applied' }, client_time: new Date().toISOString() });
    assert.equal(await closeCode(socket), CLOSE_CODES.device_revoked);
    assert.deepEqual(await db.select({ id: patients.id }).from(patients).where(eq(patients.id, patientId)), []);

    const again = await hello(user.token, clientId, null);
    assert.equal(await closeCode(again), CLOSE_CODES.device_revoked);
    // The session the revoked install said hello with ends with it (its own token would not
    // carry a device anywhere). Another device of the same user, with its own session, is welcome.
    assert.equal((await server.api('GET', '/my-profile', { token: user.token })).status, 401);
    const signIn = await server.api('POST', '/sign-in', { body: { email: user.email, password: user.password } });
    const other = await helloSync(server, signIn.body.data.token as string, randomUUID());
    other.socket.close();
  });

  test('a device that synced under an ended seat is told to wipe (4412) while it sends a cursor; without one it is welcome', async () => {
    const user = await utcClinician(server);
    const orgId = randomUUID();
    const db = server.runtime.database.db;
    await db.execute(sql`insert into organizations (id, name, type, status) values (${orgId}, ${`Riverside ${orgId}`}, 'home_health_agency', 'active')`);
    await db.execute(sql`insert into organization_members (organization_id, user_id, role) values (${orgId}, ${user.uuid}, 'member')`);
    const clientId = randomUUID();
    const { socket } = await helloSync(server, user.token, clientId);
    const { checkpoint } = await nextFeed(socket);
    await db.execute(sql`delete from organization_members where user_id = ${user.uuid}`);
    assert.equal(await closeCode(socket), CLOSE_CODES.scope_changed);

    const held = await hello(user.token, clientId, checkpoint);
    assert.equal(await closeCode(held), CLOSE_CODES.organization_left);
    const held2 = await hello(user.token, clientId, checkpoint);
    assert.equal(await closeCode(held2), CLOSE_CODES.organization_left, 'told again until it wipes');
    const wiped = await helloSync(server, user.token, clientId, null);
    const { checkpoint: fresh } = await nextFeed(wiped.socket);
    wiped.socket.close();
    await wiped.socket.closed;
    // Synced under no seat now: its cursor is welcome.
    const back = await helloSync(server, user.token, clientId, fresh);
    back.socket.close();
  });
});
