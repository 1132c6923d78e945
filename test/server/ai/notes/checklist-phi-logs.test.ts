/**
 * Transcripts are PHI: a real server process at LOG_LEVEL=trace answers the checklist
 * endpoints (success and 422) and its whole output never contains the transcript.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { seedPgliteDataDir } from '../../../helpers/backends.ts';
import { killAllServers, spawnServer } from '../../../helpers/processes.ts';
import { API, newAccount } from '../../../helpers/test-server.ts';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-ai-phi-'));
after(async () => {
  await killAllServers();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function post(base: string, pathname: string, body: unknown, token?: string) {
  const res = await fetch(base + API + pathname, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

test('checklist requests leave no transcript text in the server output', async () => {
  await seedPgliteDataDir(path.join(dataDir, 'pgdata'));
  const server = spawnServer({ FIELDCHART_DATA_DIR: dataDir, LOG_LEVEL: 'trace', WORKER_ENABLED: 'false' });
  const base = await server.url(120_000);
  const reg = await post(base, '/register', newAccount());
  assert.equal(reg.status, 200, JSON.stringify(reg.body));
  const token = reg.body.data.token as string;
  const canary = 'Zebulon Quackenbush reports knee pain after his fall on Maple Street';
  const ok = await post(base, '/ai/match-checklist', { transcript: canary, discipline: 'PT' }, token);
  assert.equal(ok.status, 200);
  assert.equal(ok.body.data.matched_items.pain.matched, true);
  const sug = await post(base, '/ai/suggestions', { transcript: canary, discipline: 'PT', checked_items: [] }, token);
  assert.equal(sug.status, 200);
  const bad = await post(base, '/ai/match-checklist', { transcript: canary, discipline: 'NOPE' }, token);
  assert.equal(bad.status, 422);
  const bad2 = await post(base, '/ai/suggestions', { transcript: canary, discipline: 'PT', checked_items: canary }, token);
  assert.equal(bad2.status, 422);
  await server.stop();
  const output = server.stdout() + server.stderr();
  assert.ok(server.logs().some((l) => String(l.url ?? l.req?.url ?? '').includes('/ai/') || JSON.stringify(l).includes('/ai/match-checklist')), 'the requests were logged');
  for (const word of ['Zebulon', 'Quackenbush', 'Maple Street']) assert.ok(!output.includes(word), `"${word}" in the server output`);
});
