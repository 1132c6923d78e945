/**
 * REST request rate limits on a real server, on every backend: per signed-in user, per
 * client address for requests without a valid token, 429 `too_many_requests` in the
 * contract's shape with Retry-After, windows that end, 0 turning a limit off, and (on
 * PostgreSQL) two nodes counting into one window.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { FLUSH_INTERVAL_MS } from '../../server/src/services/request-rate.ts';
import { forEachBackend } from '../helpers/backends.ts';
import { manualClock } from '../helpers/clock.ts';
import { RATE_LIMITS_OFF, registerUser, startTestServer, type ApiResponse, type TestServer } from '../helpers/test-server.ts';

function assertTooMany(res: ApiResponse) {
  assert.equal(res.status, 429, JSON.stringify(res.body));
  assert.deepEqual(Object.keys(res.body as object).sort(), ['code', 'message', 'status']);
  assert.equal(res.body.status, false);
  assert.equal(res.body.code, 'too_many_requests');
  const retryAfter = Number(res.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${res.headers.get('retry-after')}`);
}

forEachBackend('request rate limits', (backend) => {
  describe('per user', () => {
    const clock = manualClock(new Date('2026-11-23T09:00:00.000Z'));
    let server: TestServer;
    before(async () => {
      server = await startTestServer(backend, { clock, env: { RATE_LIMIT_PER_USER_PER_MINUTE: '5' } });
    });
    after(() => server.close());

    test('the sixth request of a minute is refused with 429 and Retry-After; other users and the next window are not', async () => {
      const alice = await registerUser(server);
      const bob = await registerUser(server);
      for (let i = 1; i <= 5; i++) {
        const res = await server.api('GET', '/my-profile', { token: alice.token });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('x-ratelimit-limit'), '5');
        assert.equal(res.headers.get('x-ratelimit-remaining'), String(5 - i));
      }
      const refused = await server.api('GET', '/my-profile', { token: alice.token });
      assertTooMany(refused);
      // Writes are counted as well: the limit is per user, not per route.
      assertTooMany(await server.api('PUT', '/update-basic-info', { token: alice.token, body: { first_name: 'A' } }));
      assert.equal((await server.api('GET', '/my-profile', { token: bob.token })).status, 200);

      clock.advance(61);
      assert.equal((await server.api('GET', '/my-profile', { token: alice.token })).status, 200);
    });
  });

  describe('per address', () => {
    const clock = manualClock(new Date('2026-11-23T09:00:00.000Z'));
    let server: TestServer;
    let user: Awaited<ReturnType<typeof registerUser>>;
    before(async () => {
      server = await startTestServer(backend, { clock, env: { RATE_LIMIT_PER_ADDRESS_PER_MINUTE: '4' } });
      user = await registerUser(server); // the address's first request of the window
    });
    after(() => server.close());

    test('requests without a valid token count against the address; a signed-in user from it is not limited by them', async () => {
      assert.equal((await server.api('GET', '/my-profile')).status, 401);
      assert.equal((await server.api('GET', '/my-profile', { token: 'not-a-token' })).status, 401);
      const signIn = await server.api('POST', '/sign-in', { body: { email: 'nobody@example.test', password: 'wrong-password-1' } });
      assert.ok([401, 422].includes(signIn.status), String(signIn.status));
      assertTooMany(await server.api('GET', '/my-profile'));
      assertTooMany(await server.api('POST', '/forgot-password/send-otp', { body: { email: user.email } }));
      assert.equal((await server.api('GET', '/my-profile', { token: user.token })).status, 200);

      clock.advance(61);
      assert.equal((await server.api('GET', '/my-profile')).status, 401);
    });
  });

  describe('turned off', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer(backend, { env: RATE_LIMITS_OFF });
    });
    after(() => server.close());

    test('0 counts nothing and refuses nothing', async () => {
      const user = await registerUser(server);
      for (let i = 0; i < 30; i++) {
        const res = await server.api('GET', '/my-profile', { token: user.token });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('x-ratelimit-limit'), null);
      }
      const result = await server.db.database.db.execute(sql`select count(*)::int as n from throttles`);
      const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Array<{ n: number }>;
      assert.equal(rows[0]?.n, 0);
    });
  });

  if (backend.name === 'postgres') {
    describe('two nodes on one database', () => {
      const clock = manualClock(new Date('2026-11-23T09:00:00.000Z'));
      let nodeA: TestServer;
      let nodeB: TestServer;
      before(async () => {
        const env = { RATE_LIMIT_PER_USER_PER_MINUTE: '6' };
        nodeA = await startTestServer(backend, { clock, env });
        nodeB = await startTestServer(backend, { clock, env, peer: nodeA });
      });
      after(async () => {
        await nodeB.close();
        await nodeA.close();
      });

      // The serving node's counts first, then the other node reads the new total (two flushes
      // at once could read before the other's counts commit; the next flush would catch up).
      const flushFrom = async (node: TestServer) => {
        await node.runtime.services.requestRate.flush();
        await (node === nodeA ? nodeB : nodeA).runtime.services.requestRate.flush();
      };

      test('share one count per user once their tallies are flushed', async () => {
        const user = await registerUser(nodeA);
        for (const node of [nodeA, nodeB, nodeA, nodeB, nodeA, nodeB]) {
          assert.equal((await node.api('GET', '/my-profile', { token: user.token })).status, 200);
          // As the periodic flush would between requests further apart than its interval.
          await flushFrom(node);
        }
        assertTooMany(await nodeA.api('GET', '/my-profile', { token: user.token }));
        assertTooMany(await nodeB.api('GET', '/my-profile', { token: user.token }));
      });

      test('the periodic flush shares counts without being asked; a node alone never admits more than the limit', async () => {
        const user = await registerUser(nodeA);
        await nodeA.runtime.services.requestRate.flush();
        // Four on A...
        for (let i = 0; i < 4; i++) assert.equal((await nodeA.api('GET', '/my-profile', { token: user.token })).status, 200);
        // ...B judges its first request on its own tally, then, after the flush interval,
        // knows the shared five: one more, then refused.
        assert.equal((await nodeB.api('GET', '/my-profile', { token: user.token })).status, 200);
        await new Promise((resolve) => setTimeout(resolve, 4 * FLUSH_INTERVAL_MS));
        assert.equal((await nodeB.api('GET', '/my-profile', { token: user.token })).status, 200);
        assertTooMany(await nodeB.api('GET', '/my-profile', { token: user.token }));
        // A, idle meanwhile, learns B's counts from its own flushes.
        await new Promise((resolve) => setTimeout(resolve, 4 * FLUSH_INTERVAL_MS));
        assertTooMany(await nodeA.api('GET', '/my-profile', { token: user.token }));
      });
    });
  }
});
