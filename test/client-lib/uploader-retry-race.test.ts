/**
 * A `retry` that arrives while the uploader is reading the outbox for its next send: the send
 * it was preparing read the outbox from before the rewind, and must not go — the retried entry
 * goes again first, with what followed it, in order. (Seen in CI as a stalled device: the
 * second entry was sent on its own, the server answered it `retry` as it answers everything
 * after a retried id, and the first was never sent again, each retry pausing longer.)
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { LocalDb, Queryable } from '../../client-lib/src/storage/local-db.ts';
import { appendToOutbox } from '../../client-lib/src/storage/outbox.ts';
import type { DraftSync } from '../../client-lib/src/sync/drafts.ts';
import { Emitter } from '../../client-lib/src/sync/emitter.ts';
import type { SyncEvents } from '../../client-lib/src/sync/events.ts';
import { StatusStore } from '../../client-lib/src/sync/status.ts';
import { Uploader, type Carrier, type OutgoingMutation } from '../../client-lib/src/sync/uploader.ts';
import { openDeviceDb } from './support.ts';

let device: LocalDb;
before(async () => {
  device = await openDeviceDb('memory://');
});
after(() => device.close());

/** The device database, whose reads of pending entries wait while `held` is set. */
function gated(db: LocalDb) {
  const gate = { held: null as Promise<void> | null, reading: null as (() => void) | null };
  const query: Queryable['query'] = async (text, params) => {
    if (gate.held && text.includes("state = 'pending' and mutation_id >")) {
      gate.reading?.();
      await gate.held;
    }
    return db.query(text, params);
  };
  return { db: new Proxy(db, { get: (target, key) => (key === 'query' ? query : Reflect.get(target, key, target)) }) as LocalDb, gate };
}

test('a retry that comes while the next send reads the outbox rewinds it: the retried entry goes again first', async () => {
  const { db, gate } = gated(device);
  const sent: number[][] = [];
  let onSend: (() => void) | null = null;
  const carrier: Carrier = {
    batchBytes: 1_000_000,
    window: 100,
    async send(batch: readonly OutgoingMutation[]) {
      sent.push(batch.map((m) => m.mutation_id));
      onSend?.();
      return { sent: batch.length, answers: [] };
    },
    settleAfter: () => null,
  };
  const uploader = new Uploader({
    db,
    drafts: { retryUnavailable() {}, prepareForSubmit: async () => ({ kind: 'own' }) } as unknown as DraftSync,
    status: new StatusStore(() => {}),
    events: new Emitter<SyncEvents>(),
    backoff: { initialMs: 5, maxMs: 20 },
    onAnswered: async () => {},
    onRekeyed() {},
  });
  const append = (first: string) => device.transaction((tx) => appendToOutbox(tx, { name: 'patient.create', args: { first_name: first }, scheduleUuid: null, clientTime: new Date().toISOString() }));
  const nextSend = () => new Promise<void>((resolve) => (onSend = resolve));

  const one = await append('One');
  let sending = nextSend();
  uploader.attach(carrier);
  await sending;
  assert.deepEqual(sent, [[one]]);

  // The second entry's send reads the outbox; the server's retry of the first comes meanwhile.
  const two = await append('Two');
  let release!: () => void;
  gate.held = new Promise((resolve) => (release = resolve));
  const reading = new Promise<void>((resolve) => (gate.reading = resolve));
  void uploader.pump();
  await reading;
  await uploader.answerAll([{ type: 'retry', mutation_id: one, after_ms: 10 }], carrier);
  gate.held = null;
  sending = nextSend();
  release();
  await sending;
  // The server answers whatever follows a retried id `retry` until that id comes again.
  while ((sent.at(-1) as number[])[0] !== one && sent.length < 6) {
    const last = sent.at(-1) as number[];
    sending = nextSend();
    await uploader.answerAll(
      last.map((id) => ({ type: 'retry' as const, mutation_id: id, after_ms: 0 })),
      carrier,
    );
    await sending;
  }
  assert.deepEqual(sent.slice(1), [[one, two]], 'after the retry: the first entry again, then the second');
  uploader.detach();
});
