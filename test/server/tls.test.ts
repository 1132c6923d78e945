import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { after, before, test } from 'node:test';
import { backends } from '../helpers/backends.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';

// TLS does not depend on the database: one backend is enough.
const backend = backends[0]!;
let server: TestServer;
let dir: string;
let ca: Buffer;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-tls-'));
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
    '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'),
  ], { stdio: 'ignore' });
  ca = fs.readFileSync(path.join(dir, 'cert.pem'));
  server = await startTestServer(backend, {
    env: { TLS_CERT_FILE: path.join(dir, 'cert.pem'), TLS_KEY_FILE: path.join(dir, 'key.pem') },
  });
});

after(async () => {
  await server.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

function port(): number {
  return Number(new URL(server.url).port);
}

function handshake(opts: tls.ConnectionOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: port(), ca, servername: 'localhost', ...opts }, () => {
      const protocol = socket.getProtocol() ?? '';
      socket.end();
      resolve(protocol);
    });
    socket.on('error', reject);
  });
}

test('serves HTTPS with the configured certificate', async () => {
  assert.match(server.url, /^https:\/\//);
  const body = await new Promise<string>((resolve, reject) => {
    https
      .get({ host: '127.0.0.1', port: port(), path: '/healthz', ca, servername: 'localhost' }, (res) => {
        let data = '';
        res.on('data', (c: Buffer) => (data += c.toString()));
        res.on('end', () => resolve(data));
      })
      .on('error', reject);
  });
  assert.deepEqual(JSON.parse(body), { status: true, checks: { process: 'ok' } });
});

test('accepts TLS 1.2 and 1.3', async () => {
  assert.equal(await handshake({ minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2' }), 'TLSv1.2');
  assert.equal(await handshake({ minVersion: 'TLSv1.3' }), 'TLSv1.3');
});

test('refuses TLS 1.1 and older', async () => {
  // The client offers only TLS 1.0–1.1 (with the security level that still allows them).
  await assert.rejects(handshake({ minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT:@SECLEVEL=0' }));
});

test('plain HTTP on the TLS port gets no API answer', async () => {
  await assert.rejects(fetch(`http://127.0.0.1:${port()}/healthz`).then(async (r) => {
    if (r.ok) throw new Error('plain HTTP was served');
    return r;
  }).then(() => Promise.reject(new Error('answered'))));
});
