import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { FastifyBaseLogger } from 'fastify';
import { startAdminSocket } from '../../server/src/admin/admin-socket.ts';
import type { OperationContext } from '@fieldchart/server';

function post(socketPath: string, name: string, body: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, path: `/ops/${name}`, method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('admin socket: a body that is not JSON is a 400 bad_request; an unexpected failure is logged, redacted', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fc-admin-'));
  const logged: Array<{ obj: any; msg: string }> = [];
  const log = { error: (obj: unknown, msg: string) => logged.push({ obj, msg }) } as unknown as FastifyBaseLogger;
  const ctx = {
    services: {},
    migrationStatus: async () => {
      throw new Error('boom for "someone@example.test"');
    },
  } as unknown as OperationContext;
  const socket = path.join(dir, 'admin.sock');
  const admin = await startAdminSocket(socket, ctx, log);
  try {
    const bad = await post(socket, 'migrate.status', '{not json');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'bad_request');
    assert.equal(logged.length, 0, 'a client mistake is not logged as a server failure');

    const failed = await post(socket, 'migrate.status', '{}');
    assert.equal(failed.status, 500);
    assert.equal(failed.body.error.code, 'internal_error');
    assert.equal(logged.length, 1);
    assert.equal(logged[0]!.obj.err.type, 'Error');
    assert.doesNotMatch(JSON.stringify(logged[0]!.obj), /someone@example\.test/);
  } finally {
    await admin.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
