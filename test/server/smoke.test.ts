import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';

forEachBackend('smoke', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('register, sign in, read profile', async () => {
    const u = await registerUser(server);
    const signIn = await server.api('POST', '/sign-in', { body: { email: u.email, password: u.password } });
    assert.equal(signIn.status, 200);
    const me = await server.api('GET', '/my-profile', { token: signIn.body.data.token });
    assert.equal(me.status, 200);
    assert.equal(me.body.data.email, u.email);
  });
});
