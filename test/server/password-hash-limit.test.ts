/**
 * Password hashing runs at most PASSWORD_HASH_CONCURRENCY argon2 computations at once and
 * queues the rest in order, so a burst of sign-ins cannot take every core from the event loop
 * (bench/healthz-under-load.ts has the figures).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { loadConfig } from '../../server/src/config.ts';
import { hashSecret, limitPasswordHashing, passwordHashingLoad, verifySecret } from '../../server/src/security/passwords.ts';

after(() => limitPasswordHashing(1));

for (const concurrency of [1, 2]) {
  test(`with ${concurrency} at once, a burst of four queues the rest and every result is right`, async () => {
    limitPasswordHashing(concurrency);
    const secrets = ['alpha one', 'beta two', 'gamma three', 'delta four'];
    const hashes = secrets.map((s) => hashSecret(s));
    await Promise.resolve();
    assert.deepEqual(passwordHashingLoad(), { active: concurrency, pending: secrets.length - concurrency });
    const done = await Promise.all(hashes);
    assert.deepEqual(passwordHashingLoad(), { active: 0, pending: 0 });
    const checks = await Promise.all(done.flatMap((h, i) => [verifySecret(h, secrets[i] as string), verifySecret(h, 'wrong')]));
    assert.deepEqual(checks, secrets.flatMap(() => [true, false]));
  });
}

test('PASSWORD_HASH_CONCURRENCY: 0 by default (the module keeps cores − 1), a count when set, never negative', () => {
  assert.equal(loadConfig({}).limits.passwordHashConcurrency, 0);
  assert.equal(loadConfig({ PASSWORD_HASH_CONCURRENCY: '3' }).limits.passwordHashConcurrency, 3);
  assert.throws(() => loadConfig({ PASSWORD_HASH_CONCURRENCY: '-1' }));
});
