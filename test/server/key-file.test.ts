/**
 * A server and a worker started at the same instant on a fresh data dir both create the
 * embedded key files: each must end up with the one key that was kept, never a half-written
 * file (a plain exclusive write let the loser read an empty one).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { loadPhiKeyFile } from '../../server/src/security/phi-keyring.ts';
import { loadSigningKeys } from '../../server/src/security/signing-keys.ts';

const run = promisify(execFile);
const fresh = () => fs.mkdtemp(path.join(os.tmpdir(), 'fc-keys-'));

test('concurrent first loads in one process agree on one key of each kind', async () => {
  for (let round = 0; round < 20; round++) {
    const dataDir = await fresh();
    const phi = await Promise.all(Array.from({ length: 8 }, () => loadPhiKeyFile({ phiKeys: null, dataDir })));
    const jwt = await Promise.all(Array.from({ length: 8 }, () => loadSigningKeys({ privateJwks: null, dataDir })));
    assert.equal(new Set(phi.map((k) => JSON.stringify(k))).size, 1);
    assert.equal(new Set(jwt.map((k) => k.current.kid)).size, 1);
    const names = await fs.readdir(path.join(dataDir, 'keys'));
    assert.deepEqual(names.sort(), ['jwt-signing.jwks.json', 'phi-keys.json'], 'no temporary file is left');
    for (const name of names) assert.equal((await fs.stat(path.join(dataDir, 'keys', name))).mode & 0o777, 0o600);
    await fs.rm(dataDir, { recursive: true, force: true });
  }
});

test('processes started at the same instant agree on one key', async () => {
  const dataDir = await fresh();
  const at = Date.now() + 1500;
  const script = `
    import { loadPhiKeyFile } from ${JSON.stringify(path.resolve('server/src/security/phi-keyring.ts'))};
    import { loadSigningKeys } from ${JSON.stringify(path.resolve('server/src/security/signing-keys.ts'))};
    await new Promise((r) => setTimeout(r, ${at} - Date.now()));
    const [phi, jwt] = await Promise.all([
      loadPhiKeyFile({ phiKeys: null, dataDir: ${JSON.stringify(dataDir)} }),
      loadSigningKeys({ privateJwks: null, dataDir: ${JSON.stringify(dataDir)} }),
    ]);
    console.log(JSON.stringify({ phi: phi.current, index: phi.index_key, kid: jwt.current.kid }));`;
  const outputs = await Promise.all(Array.from({ length: 4 }, () => run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script])));
  assert.equal(new Set(outputs.map((o) => o.stdout.trim())).size, 1);
  await fs.rm(dataDir, { recursive: true, force: true });
});
