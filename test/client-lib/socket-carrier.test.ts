/**
 * The socket carrier's frames (docs/sync-protocol.md, Versioning: version 5): on a socket
 * welcomed with protocol 5 a batch goes in `mutations` frames cut at 500 mutations or about
 * 1 MiB of their JSON, a mutation as large alone in a frame of its own, every frame a valid
 * client message under the socket's 4 MiB; before 5, one `mutation` frame each. A send that
 * fails counts only the mutations of the frames that went.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientMessage, type ClientMessage } from '@fieldchart/schema/sync';
import { socketCarrier } from '../../client-lib/src/sync/carriers.ts';
import type { Connection } from '../../client-lib/src/sync/connection.ts';
import type { OutgoingMutation } from '../../client-lib/src/sync/uploader.ts';

const FRAME_LIMIT = 4 * 1024 * 1024;

/** A connection that records the frames it is given; `openFor` frames, then it is closed. */
function recordingConnection(openFor = Number.POSITIVE_INFINITY) {
  const frames: string[] = [];
  const sendText = (text: string) => {
    if (frames.length >= openFor) return false;
    frames.push(text);
    return true;
  };
  const conn = { sendText, send: (m: ClientMessage) => sendText(JSON.stringify(m)) } as unknown as Connection;
  return { conn, frames };
}

const mutation = (id: number, note = 'x'): OutgoingMutation => ({
  mutation_id: id,
  name: 'patient.update',
  args: { uuid: '0b7e7f2e-5a49-4c0e-9a51-2f6f0d1f6a11', notes: note },
  client_time: '2026-12-05T10:00:00.000Z',
});

const parsed = (frames: readonly string[]) =>
  frames.map((f) => {
    assert.ok(Buffer.byteLength(f) < FRAME_LIMIT, `a frame of ${Buffer.byteLength(f)} bytes`);
    return clientMessage.parse(JSON.parse(f));
  });
const idsOf = (messages: readonly ClientMessage[]) =>
  messages.flatMap((m) => (m.type === 'mutations' ? m.mutations.map((x) => x.mutation_id) : m.type === 'mutation' ? [m.mutation_id] : []));

test('protocol 5: frames of at most 500, in order; a mutation of more than 1 MiB alone; 3-byte characters stay under the frame limit', async () => {
  const { conn, frames } = recordingConnection();
  const big = 'é'.repeat(1024 * 1024 + 10);
  // Non-ASCII text: 2–3 bytes a character on the wire, cut by characters.
  const wide = '漢'.repeat(300 * 1024);
  const batch = [
    ...Array.from({ length: 1_200 }, (_, k) => mutation(k + 1)),
    mutation(1_201, big),
    mutation(1_202),
    ...Array.from({ length: 6 }, (_, k) => mutation(1_203 + k, wide)),
  ];
  const { sent, answers } = await socketCarrier(conn, () => null, 2000, 5).send(batch, new AbortController().signal);
  assert.equal(sent, batch.length);
  assert.deepEqual(answers, []);
  const messages = parsed(frames);
  assert.ok(messages.every((m) => m.type === 'mutations'));
  assert.deepEqual(idsOf(messages), batch.map((m) => m.mutation_id), 'each once, in order');
  const sizes = messages.map((m) => (m.type === 'mutations' ? m.mutations.length : 0));
  assert.deepEqual(sizes.slice(0, 3), [500, 500, 200], 'cut at 500 and before the large one');
  assert.equal(sizes[3], 1, 'the large mutation alone');
  assert.ok(sizes.slice(4).every((n) => n <= 4), `the wide ones cut by length: ${sizes.join(', ')}`);
});

test('before protocol 5: one `mutation` frame each', async () => {
  const { conn, frames } = recordingConnection();
  const batch = Array.from({ length: 30 }, (_, k) => mutation(k + 1));
  const { sent } = await socketCarrier(conn, () => null, 100, 4).send(batch, new AbortController().signal);
  assert.equal(sent, 30);
  const messages = parsed(frames);
  assert.equal(messages.length, 30);
  assert.ok(messages.every((m) => m.type === 'mutation'));
  assert.deepEqual(idsOf(messages), batch.map((m) => m.mutation_id));
});

test('a socket that closes mid-send: only the mutations of frames that went count as sent', async () => {
  for (const [protocol, openFor, expected] of [
    [5, 1, 500],
    [5, 0, 0],
    [4, 7, 7],
  ] as const) {
    const { conn } = recordingConnection(openFor);
    const batch = Array.from({ length: 1_000 }, (_, k) => mutation(k + 1));
    const { sent } = await socketCarrier(conn, () => null, 2000, protocol).send(batch, new AbortController().signal);
    assert.equal(sent, expected, `protocol ${protocol}, ${openFor} frames`);
  }
});
