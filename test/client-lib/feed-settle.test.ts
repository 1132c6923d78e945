/**
 * When an acknowledged write stops being shown optimistically. The race CI found: an HTTP
 * request still in flight when the socket was welcomed is answered after the socket's last
 * `synced`, whose `acked_through` already covers it; a quiet server sends no further `synced`,
 * so unless the answer settles against what the socket has said, `whenSynced` never resolves.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FeedReceiver } from '../../client-lib/src/sync/feed.ts';
import { Emitter } from '../../client-lib/src/sync/emitter.ts';
import type { SyncEvents } from '../../client-lib/src/sync/events.ts';
import { StatusStore } from '../../client-lib/src/sync/status.ts';
import type { LocalDb } from '../../client-lib/src/storage/local-db.ts';
import { ackEntries, appendToOutbox, settlingCount } from '../../client-lib/src/storage/outbox.ts';
import { openDeviceDb } from './support.ts';

async function withFeed(fn: (db: LocalDb, feed: FeedReceiver) => Promise<void>): Promise<void> {
  const db = await openDeviceDb('memory://');
  try {
    const feed = new FeedReceiver({ db, status: new StatusStore(() => {}), events: new Emitter<SyncEvents>() });
    await fn(db, feed);
  } finally {
    await db.close();
  }
}

async function write(db: LocalDb): Promise<number> {
  return db.transaction((tx) =>
    appendToOutbox(tx, { name: 'patient.create', args: { first_name: 'X' }, scheduleUuid: null, clientTime: new Date().toISOString() }),
  );
}

const synced = (ackedThrough: number) => ({ type: 'synced', cursor: 'c1', server_time: new Date().toISOString(), acked_through: ackedThrough }) as const;

test('an HTTP ack that arrives after the synced covering it settles at once', async () => {
  await withFeed(async (db, feed) => {
    const id = await write(db);
    await feed.receive(synced(id));
    // The HTTP carrier's ack names no synced count: only acked_through can settle it.
    await ackEntries(db, [{ mutationId: id, result: {}, settleAfter: null }], new Date().toISOString());
    assert.equal(await settlingCount(db), 1);
    await feed.settleAnswered(true);
    assert.equal(await settlingCount(db), 0, 'settled against the socket’s acked_through');
  });
});

test('an ack beyond the socket’s acked_through, or under a re-keyed client id, waits for its own synced', async () => {
  await withFeed(async (db, feed) => {
    const first = await write(db);
    const second = await write(db);
    await feed.receive(synced(first));
    await ackEntries(db, [{ mutationId: second, result: {}, settleAfter: null }], new Date().toISOString());
    await feed.settleAnswered(true);
    assert.equal(await settlingCount(db), 1, 'not covered yet');
    await feed.receive(synced(second));
    assert.equal(await settlingCount(db), 0);

    const third = await write(db);
    await feed.receive(synced(third));
    await ackEntries(db, [{ mutationId: third, result: {}, settleAfter: null }], new Date().toISOString());
    await feed.settleAnswered(false);
    assert.equal(await settlingCount(db), 1, 'a new client id: the old socket’s figure says nothing of it');
    await feed.disconnected();
    await feed.settleAnswered(true);
    assert.equal(await settlingCount(db), 1, 'a closed socket’s figure is forgotten');
  });
});
