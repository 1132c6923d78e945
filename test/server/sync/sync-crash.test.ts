/**
 * The server killed with SIGKILL in the middle of a device's upload: every mutation it
 * acknowledged survives, nothing is applied twice, and the device finishes the upload against
 * the restarted server — on the embedded database (crash recovery of the data dir) and on
 * PostgreSQL.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { backends, serverDataDir } from '../../helpers/backends.ts';
import { spawnServer, type ServerProcess } from '../../helpers/processes.ts';
import { newAccount } from '../../helpers/test-server.ts';
import { helloSync, nextFeed, type SyncSocket } from '../../helpers/sync-socket.ts';

const MUTATIONS = 600;
const API = '/api/therapist/v1';

async function register(url: string): Promise<string> {
  const res = await fetch(`${url}${API}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(newAccount()),
  });
  const body = (await res.json()) as { data: { token: string } };
  assert.equal(res.status, 200);
  return body.data.token;
}

const mutation = (id: number, patientId: string) => ({
  type: 'mutation',
  mutation_id: id,
  name: 'patient.create',
  args: { uuid: patientId, first_name: `Patient${id}`, last_name: 'Crash' },
  client_time: new Date().toISOString(),
});

/** Sends mutations `from`…MUTATIONS as a device does: at most 100 unanswered (the protocol's limit). */
function upload(socket: SyncSocket, from: number, patientIds: string[]): void {
  let next = from;
  const fill = () => {
    const answered = socket.received.filter((m) => m.type === 'ack' || m.type === 'reject').length - answeredBefore;
    while (next <= MUTATIONS && next - from - answered < 100) {
      socket.send(mutation(next, patientIds[next] as string));
      next++;
    }
  };
  const answeredBefore = socket.received.filter((m) => m.type === 'ack' || m.type === 'reject').length;
  socket.ws.on('message', fill);
  fill();
}

for (const backend of backends) {
  test(`kill -9 mid-upload loses no acknowledged mutation and applies none twice [${backend.name}]`, async () => {
    const dataDir = await serverDataDir('fieldchart-crash-', backend.name === 'postgres');
    // PostgreSQL: a fresh migrated database the server process connects to by URL.
    const db = backend.name === 'postgres' ? await backend.open() : null;
    const dbUrl = db?.url ?? undefined;
    const env = { FIELDCHART_DATA_DIR: dataDir, DATABASE_URL: dbUrl, LOG_LEVEL: 'info' };
    let server: ServerProcess | null = spawnServer(env);
    after(async () => {
      await server?.stop('SIGKILL');
      fs.rmSync(dataDir, { recursive: true, force: true });
      await db?.drop();
    });
    const url = await server.url();
    const token = await register(url);
    const clientId = randomUUID();
    const patientIds = Array.from({ length: MUTATIONS + 1 }, () => randomUUID());

    const first = await helloSync(url.replace(/^http/, 'ws') + `${API}/sync`, token, clientId);
    upload(first.socket, 1, patientIds);
    // Some acknowledged, the rest queued or in a transaction: now the process dies.
    await first.socket.next('ack', (m) => m.mutation_id >= 20, 60_000);
    process.kill(server.pid, 'SIGKILL');
    await server.exited;
    await first.socket.closed;
    const acked = first.socket.received.filter((m) => m.type === 'ack').map((m) => m.mutation_id);
    assert.ok(acked.length < MUTATIONS, `the kill came mid-upload (${acked.length} acks)`);

    server = spawnServer(env);
    const url2 = await server.url();
    const again = await helloSync(url2.replace(/^http/, 'ws') + `${API}/sync`, token, clientId);
    const last = again.welcome.last_mutation_id;
    assert.ok(acked.every((id) => id <= last), `every acknowledged mutation is durable (last ${last}, max ack ${Math.max(...acked)})`);
    // The device resends from the head of its outbox: what the server already has is acked, not applied.
    upload(again.socket, Math.max(1, last - 5), patientIds);
    await again.socket.next('ack', (m) => m.mutation_id === MUTATIONS, 120_000);
    again.socket.close();

    // A fresh device sees exactly the patients the mutations created, each once.
    const check = await helloSync(url2.replace(/^http/, 'ws') + `${API}/sync`, token, randomUUID());
    const feed = await nextFeed(check.socket, 60_000);
    const patients = feed.changes.filter((c) => c.table === 'patients' && c.op === 'upsert').map((c) => c.id).sort();
    assert.deepEqual(patients, patientIds.slice(1).sort());
    check.socket.close();
    assert.equal((await server.stop()).code, 0);
    server = null;
  });
}
