/**
 * Restart after `kill -9` under write load (issue 9, item 6): the next server starts the
 * first time — right after the kill, and also in a fresh pid namespace, where it gets the dead
 * server's pid (1), as a container restart gives — and every write it acknowledged is there.
 * On both databases (for PGlite the data dir is the database and holds the lock).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { backends, serverDataDir } from '../helpers/backends.ts';
import { killAllServers, spawnServer, type ServerProcess } from '../helpers/processes.ts';
import { helloSync, nextFeed } from '../helpers/sync-socket.ts';
import { newAccount } from '../helpers/test-server.ts';

const API = '/api/therapist/v1';
const WRITERS = 4;

after(() => killAllServers());

const UNSHARE = ['unshare', '--pid', '--fork', '--mount-proc', '--kill-child'];
/** Why a fresh pid namespace cannot be made here, or null when it can. */
function namespaceUnavailable(): string | null {
  const r = spawnSync(UNSHARE[0] as string, [...UNSHARE.slice(1), 'true'], { stdio: 'pipe', timeout: 10_000 });
  if (r.error) return `unshare not available: ${r.error.message}`;
  if (r.status !== 0) return `unshare --pid refused (not root, or no user namespaces): ${String(r.stderr).trim()}`;
  return null;
}

async function register(url: string): Promise<string> {
  const res = await fetch(`${url}${API}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(newAccount()) });
  assert.equal(res.status, 200);
  return ((await res.json()) as { data: { token: string } }).data.token;
}

/**
 * Writers creating patients until stopped: answers the uuids the server acknowledged (200).
 * A write cut by the kill has no answer and is not counted: it may or may not be stored.
 */
function writeLoad(url: string, token: string) {
  const acked: string[] = [];
  let stop = false;
  const writer = async () => {
    while (!stop) {
      try {
        const res = await fetch(`${url}${API}/patient/create`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ first_name: 'Restart', last_name: `Load${acked.length}`, address: '1 Main St' }),
        });
        if (res.status === 200) acked.push(((await res.json()) as { data: { uuid: string } }).data.uuid);
        else await res.arrayBuffer();
      } catch {
        return; // the server died under the request
      }
    }
  };
  const done = Promise.all(Array.from({ length: WRITERS }, writer));
  return { acked, done, stop: () => (stop = true) };
}

/** The host pid of the process a `unshare --fork` wrapper started (pid 1 of its namespace). */
function childOf(pid: number): number {
  const children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  assert.equal(children.length, 1, `one child of unshare: ${children.join(',')}`);
  return children[0] as number;
}

/**
 * Three lives of one deployment: on the host, then twice in a fresh pid namespace (where it
 * is pid 1, and the second time finds a lock file naming pid 1 — its own pid — left by the
 * killed first). Each life but the last ends with `kill -9` under write load, and the next
 * starts at once; each must be up the first time and hold every write acknowledged before.
 */
const namespaceSkip = namespaceUnavailable();
if (namespaceSkip) console.log(`# pid-namespace restarts not tested here: ${namespaceSkip}`);

for (const backend of backends) {
  test(`kill -9 under write load, then start again at once: up the first time, nothing acknowledged lost [${backend.name}]`, async (t) => {
    const dataDir = await serverDataDir('fieldchart-restart-', backend.name === 'postgres');
    const db = backend.name === 'postgres' ? await backend.open() : null;
    const env = { FIELDCHART_DATA_DIR: dataDir, DATABASE_URL: db?.url ?? undefined, LOG_LEVEL: 'info' };
    const lives = namespaceSkip ? (['host', 'host', 'host'] as const) : (['host', 'pid-namespace', 'pid-namespace'] as const);
    if (namespaceSkip) t.diagnostic(`restarts on the host only: ${namespaceSkip}`);
    let server: ServerProcess | null = null;
    let wrapped = false;
    let token = '';
    const acked: string[] = [];
    try {
      for (const [i, where] of lives.entries()) {
        const wrap = where === 'pid-namespace' ? UNSHARE : undefined;
        server = spawnServer(env, wrap ? { wrap } : {});
        wrapped = wrap !== undefined;
        // Up the first time: a refused start (exit 75, "in use") rejects here.
        const url = await server.url(120_000);
        if (wrap) assert.match(fs.readFileSync(`/proc/${childOf(server.pid)}/status`, 'utf8'), /^NSpid:\s+\d+\s+1$/m, 'the server is pid 1 of its namespace');
        if (!token) token = await register(url);

        // Every write acknowledged in the lives before is there (a fresh device's first sync).
        const check = await helloSync(`${url.replace(/^http/, 'ws')}${API}/sync`, token, randomUUID());
        const feed = await nextFeed(check.socket, 60_000);
        check.socket.close();
        const stored = new Set(feed.changes.filter((c) => c.table === 'patients' && c.op === 'upsert').map((c) => c.id));
        const lost = acked.filter((id) => !stored.has(id));
        assert.deepEqual(lost, [], `life ${i + 1} (${where}): ${lost.length} of ${acked.length} acknowledged writes lost`);

        if (i === lives.length - 1) {
          // unshare does not pass SIGTERM on: the server itself is told, and unshare exits with it.
          if (wrap) process.kill(childOf(server.pid), 'SIGTERM');
          assert.equal((await (wrap ? server.exited : server.stop())).code, 0);
          server = null;
          break;
        }
        const load = writeLoad(url, token);
        const deadline = Date.now() + 60_000;
        while (load.acked.length < 20 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
        assert.ok(load.acked.length >= 20, `writes were acknowledged before the kill (${load.acked.length})`);
        // The server itself dies (in a namespace: its pid 1, so the namespace dies with it).
        process.kill(wrap ? childOf(server.pid) : server.pid, 'SIGKILL');
        await server.exited;
        load.stop();
        await load.done;
        acked.push(...load.acked);
        // At once, no clean-up in between: the dead server's lock file is still there.
        if (!db) assert.ok(fs.existsSync(path.join(dataDir, 'fieldchart.lock')), 'the dead server left its lock file');
      }
    } finally {
      if (server) {
        try {
          if (wrapped) process.kill(childOf(server.pid), 'SIGKILL');
        } catch {
          // already gone
        }
        await server.stop('SIGKILL');
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
      await db?.drop();
    }
  });
}
