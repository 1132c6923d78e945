/**
 * Keeps docs/sync-protocol.md true to the contract in schema/src/sync: every example message
 * in the document parses with the schema of its direction, every message type has an example,
 * and the close-code table is the module's.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { CLOSE_CODES, clientMessage, closeCodeName, serverMessage, shouldReconnect } from '@fieldchart/schema/sync';

const doc = fs.readFileSync(path.resolve('docs/sync-protocol.md'), 'utf8');

function examples(direction: 'client' | 'server'): unknown[] {
  const blocks = [...doc.matchAll(new RegExp('```json ' + direction + '\\n([\\s\\S]*?)\\n```', 'g'))];
  return blocks.map((m) => JSON.parse(m[1] ?? ''));
}

test('every example the device sends parses as a client message', () => {
  const found = examples('client');
  assert.ok(found.length >= 5);
  for (const e of found) {
    const r = clientMessage.safeParse(e);
    assert.ok(r.success, `${JSON.stringify(e)}\n${r.success ? '' : JSON.stringify(r.error.issues)}`);
  }
});

test('every example the server sends parses as a server message', () => {
  const found = examples('server');
  assert.ok(found.length >= 8);
  for (const e of found) {
    const r = serverMessage.safeParse(e);
    assert.ok(r.success, `${JSON.stringify(e)}\n${r.success ? '' : JSON.stringify(r.error.issues)}`);
  }
});

test('every message type has an example in the document', () => {
  const typesOf = (schema: typeof clientMessage | typeof serverMessage) => schema.options.map((o) => o.shape.type.value);
  const shown = (direction: 'client' | 'server') => new Set(examples(direction).map((e) => (e as { type: string }).type));
  for (const t of typesOf(clientMessage)) assert.ok(shown('client').has(t), `no client example of ${t}`);
  for (const t of typesOf(serverMessage)) assert.ok(shown('server').has(t), `no server example of ${t}`);
});

test('the close-code table is the module, row for row', () => {
  const rows = [...doc.matchAll(/^\| (\d{4}) \| `([a-z_]+)` \|/gm)].map((m) => [m[2], Number(m[1])]);
  assert.deepEqual(Object.fromEntries(rows), CLOSE_CODES);
  assert.equal(closeCodeName(4401), 'unauthorized');
  assert.equal(closeCodeName(4999), null);
  assert.equal(shouldReconnect(CLOSE_CODES.going_away), true);
  assert.equal(shouldReconnect(CLOSE_CODES.account_disabled), false);
  assert.equal(shouldReconnect(CLOSE_CODES.superseded), false);
  assert.equal(shouldReconnect(CLOSE_CODES.device_revoked), false);
  assert.equal(shouldReconnect(CLOSE_CODES.organization_left), true, 'a wiped device connects again with no cursor');
});

test('malformed messages are refused: a token in the wrong place, unknown fields, a bad doc name', () => {
  assert.equal(clientMessage.safeParse({ type: 'hello', protocol: 1, client_id: 'x', cursor: null }).success, false);
  assert.equal(
    clientMessage.safeParse({ type: 'auth', token: 't', extra: true }).success,
    false,
    'unknown fields are refused (strict)',
  );
  assert.equal(clientMessage.safeParse({ type: 'doc_open', doc: 'patient/1/notes' }).success, false);
  assert.equal(
    clientMessage.safeParse({ type: 'mutation', mutation_id: 0, name: 'visit.mileage', args: {}, client_time: '2026-11-21T14:00:00Z' }).success,
    false,
    'mutation ids start at 1',
  );
});
