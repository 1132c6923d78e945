/**
 * `fieldchart keys …` and `fieldchart audit export` as operators run them: on a running
 * embedded server (through its admin socket, so the server's own key ring is swapped in
 * place and it keeps serving), and on PostgreSQL beside a running server (which picks the
 * rotated key file up when it meets the new key id).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { phiKeyFileOf } from '@fieldchart/server';
import { backends, serverDataDir } from '../helpers/backends.ts';
import { cliJson, killAllServers, runCli, spawnServer, apiRequest as http } from '../helpers/processes.ts';
import { newAccount, startTestServer } from '../helpers/test-server.ts';

const tempDirs: string[] = [];
after(async () => {
  await killAllServers();
  for (const d of tempDirs) fs.rmSync(d, { recursive: true, force: true });
});


/** A clinician with a patient; answers what the checks need. */
async function clinicianWithPatient(base: string, first: string) {
  const account = newAccount();
  const reg = await http(base, 'POST', '/register', { body: account });
  assert.equal(reg.status, 200, JSON.stringify(reg.body));
  const token = reg.body.data.token as string;
  const created = await http(base, 'POST', '/patient/create', { token, body: { first_name: first, last_name: 'Keyholder', email: 'kh@example.test' } });
  assert.equal(created.status, 200, JSON.stringify(created.body));
  return { token, uuid: reg.body.data.user.uuid as string };
}

async function readsBack(base: string, token: string, first: string) {
  const list = await http(base, 'GET', `/patient/my-patients?search_by_name=${first.slice(0, 6)}`, { token });
  assert.equal(list.status, 200, JSON.stringify(list.body));
  assert.deepEqual(list.body.data.map((p: { first_name: string }) => p.first_name), [first]);
}

describe('fieldchart keys and audit: embedded, with the server running', () => {
  test('rotate goes through the admin socket: the server swaps its ring and keeps reading; audit export prints JSON lines', async () => {
    const dataDir = await serverDataDir('fieldchart-keys-', false);
    tempDirs.push(dataDir);
    const env = { FIELDCHART_DATA_DIR: dataDir };
    const server = spawnServer(env);
    try {
      const base = await server.url();
      const me = await clinicianWithPatient(base, 'Rotanna');
      const before = await cliJson(['keys', 'status'], env);
      assert.equal(before.key_source, 'file');
      assert.ok(before.keys[0].values >= 3);

      const run = await runCli(['--verbose', 'keys', 'rotate', '--batch-size', '1'], env);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stderr, new RegExp(`admin socket of server process ${server.pid}`));
      assert.match(run.stdout, new RegExp(`Rotated ${before.current_key_id} -> k\\w+`));
      assert.equal(fs.statSync(phiKeyFileOf(dataDir)).mode & 0o777, 0o600);

      await readsBack(base, me.token, 'Rotanna');
      await clinicianWithPatient(base, 'Postrota');
      const afterStatus = await cliJson(['keys', 'status'], env);
      assert.notEqual(afterStatus.current_key_id, before.current_key_id);
      assert.equal(afterStatus.not_current, 0, 'old values re-encrypted and new ones written under the new key');
      const text = await runCli(['keys', 'status'], env);
      assert.match(text.stdout, /0 value\(s\) not under the current key/);

      const exported = await runCli(['audit', 'export', '--from', '2000-01-01'], env);
      assert.equal(exported.code, 0, exported.stderr);
      const lines = exported.stdout.trim().split('\n').map((l) => JSON.parse(l));
      assert.ok(lines.some((e) => e.action === 'create' && e.resource_type === 'patient' && e.actor_user_id === me.uuid));
      assert.ok(lines.some((e) => e.action === 'rotate' && e.outcome === 'success'));
      assert.ok(!exported.stdout.includes('Rotanna') && !exported.stdout.includes('kh@example.test'), 'no PHI in the export');
      assert.deepEqual(await cliJson(['audit', 'export', '--from', '2999-01-01'], env), []);
      const bad = await runCli(['audit', 'export', '--from', 'yesterday-ish'], env);
      assert.notEqual(bad.code, 0);
    } finally {
      await server.stop();
    }
  });
});

const postgres = backends.find((b) => b.name === 'postgres');
if (postgres) {
  describe('fieldchart keys and audit: PostgreSQL', () => {
    test('rotate from the CLI beside a running server: the server reads the new key, export works', async () => {
      const server = await startTestServer(postgres);
      try {
        const env = { DATABASE_URL: server.db.url ?? '', FIELDCHART_DATA_DIR: server.dataDir };
        const me = await clinicianWithPatient(server.url, 'Pgrotor');
        const rotated = await cliJson(['keys', 'rotate'], env);
        assert.equal(rotated.rotated, true);
        assert.ok(rotated.total >= 3);
        await readsBack(server.url, me.token, 'Pgrotor');
        assert.equal(server.runtime.services.phi.ring().currentKeyId, rotated.key_id, 'the server picked the rotated key file up');
        const lines = (await runCli(['audit', 'export'], env)).stdout.trim().split('\n').map((l) => JSON.parse(l));
        assert.ok(lines.some((e) => e.action === 'list' && e.resource_type === 'patient' && e.actor_user_id === me.uuid));
        assert.ok(lines.some((e) => e.action === 'rotate' && e.resource_id === rotated.key_id));
      } finally {
        await server.close();
      }
    });
  });
}
