/**
 * The socket's ordering queue (server/src/sync/socket-queue.ts): runs of mutations handed over
 * together, and a short run that waits a bounded time for the frames its caller expects (a
 * draining device refilling its window) so that one transaction holds them all.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SocketQueue } from '../../../server/src/sync/socket-queue.ts';

type Frame = { kind: 'm' | 'x'; n: number };

function queueOf(expect?: (run: number) => { frames: number; withinMs: number }) {
  const handled: number[][] = [];
  let release: () => void = () => {};
  const queue = new SocketQueue<Frame>({
    capacity: 500,
    maxBatch: 5,
    alongside: () => false,
    batch: (f) => f.kind === 'm',
    ...(expect ? { expect } : {}),
    handle: async (frames) => {
      handled.push(frames.map((f) => f.n));
      await new Promise<void>((resolve) => (release = resolve));
    },
    onError: (err) => assert.fail(String(err)),
  });
  return { queue, handled, release: () => release() };
}

const until = async (check: () => boolean, ms = 2_000) => {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) assert.fail('timed out');
    await new Promise((r) => setTimeout(r, 1));
  }
};

test('without expectations a frame that finds the queue idle is handled alone, the rest together after it', async () => {
  const { queue, handled, release } = queueOf();
  for (let n = 1; n <= 4; n++) queue.push({ kind: 'm', n });
  await until(() => handled.length === 1);
  release();
  await until(() => handled.length === 2);
  release();
  assert.deepEqual(handled, [[1], [2, 3, 4]]);
});

test('a short run waits for the frames its caller expects, and no longer than it says', async () => {
  const asked: number[] = [];
  const { queue, handled, release } = queueOf((run) => {
    asked.push(run);
    return { frames: 3, withinMs: 200 };
  });
  // Expected frames arriving within the wait: one batch of them all.
  queue.push({ kind: 'm', n: 1 });
  setTimeout(() => {
    for (let n = 2; n <= 4; n++) queue.push({ kind: 'm', n });
  }, 5);
  await until(() => handled.length === 1);
  assert.deepEqual(handled[0], [1, 2, 3, 4]);
  assert.deepEqual(asked, [1]);
  release();
  // Expected frames that do not come: the run goes after the wait, as it is.
  const started = performance.now();
  queue.push({ kind: 'm', n: 5 });
  await until(() => handled.length === 2);
  assert.deepEqual(handled[1], [5]);
  assert.ok(performance.now() - started >= 150, 'waited for the expected frames');
  release();
});

test('a run never waits beyond the batch limit, nor when other frames follow it', async () => {
  const { queue, handled, release } = queueOf(() => ({ frames: 50, withinMs: 10_000 }));
  queue.push({ kind: 'x', n: 0 });
  // While frame 0 is handled: a full run, then a short one cut by another kind of frame.
  for (let n = 1; n <= 7; n++) queue.push({ kind: 'm', n });
  queue.push({ kind: 'x', n: 8 });
  const started = performance.now();
  release();
  await until(() => handled.length === 2);
  release();
  await until(() => handled.length === 3);
  release();
  await until(() => handled.length === 4);
  release();
  assert.deepEqual(handled, [[0], [1, 2, 3, 4, 5], [6, 7], [8]]);
  assert.ok(performance.now() - started < 5_000, 'no run waited');
});

test('past its byte bound the queue holds reading back, refuses nothing, and lets reading go on at half', async () => {
  const handled: number[] = [];
  const pressure: boolean[] = [];
  const gates: Array<() => void> = [];
  const queue = new SocketQueue<Frame>({
    capacity: 500,
    maxBatch: 1,
    alongside: (f) => f.kind === 'x',
    batch: () => false,
    handle: async (frames) => {
      await new Promise<void>((resolve) => gates.push(resolve));
      handled.push(...frames.map((f) => f.n));
    },
    onError: (err) => assert.fail(String(err)),
    bytes: { max: 100, weigh: () => 30, pressure: (on) => pressure.push(on) },
  });
  // 30 bytes each: the fourth frame (120 held) is past the bound, the ones after it say nothing new.
  for (let n = 1; n <= 6; n++) assert.equal(queue.push({ kind: n === 5 ? 'x' : 'm', n }), true);
  assert.deepEqual(pressure, [true]);
  assert.equal(queue.bytesHeld, 180);
  // Handled one by one, each held while it is handled and released after: reading goes on at 50 or less.
  const step = async (expectedHeld: number) => {
    await until(() => gates.length > 0);
    (gates.shift() as () => void)();
    await until(() => queue.bytesHeld === expectedHeld);
  };
  await step(150);
  await step(120);
  await step(90);
  assert.deepEqual(pressure, [true], 'still above half');
  await step(60);
  assert.deepEqual(pressure, [true]);
  await step(30);
  assert.deepEqual(pressure, [true, false], 'reading goes on once half the bound is reached');
  await step(0);
  assert.deepEqual(handled, [1, 2, 3, 4, 5, 6]);
});
