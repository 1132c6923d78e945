/**
 * A load run's memory is judged per process life: a restart starts memory over, so a kill
 * neither hides a leak (the lives are judged apart) nor fakes one (their thirds never mix).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { judgeRss, type RssSample } from '../../bench/support/rss-lives.ts';

const life = (node: string, pid: number, from: number, to: number, mib: (t: number) => number): RssSample[] => {
  const xs: RssSample[] = [];
  for (let t = from; t <= to; t += 5) xs.push({ node, pid, atSeconds: t, mib: mib(t) });
  return xs;
};

test('a kill and restart is a new life: a restarted process that settles higher is not read as a leak', () => {
  // Killed at 120 s with 300 MiB; the new process takes every device's reconnection at once,
  // warms up from 250 to 600 MiB, then holds.
  const samples = [...life('server', 10, 0, 120, () => 300), ...life('server', 11, 125, 195, (t) => (t < 140 ? 250 + (t - 125) * 23 : 600))];
  const judged = judgeRss(samples, { minSeconds: 45 });
  assert.equal(judged.lives.length, 2);
  assert.deepEqual(judged.lives.map((l) => [l.pid, l.flat]), [[10, true], [11, true]]);
  assert.equal(judged.flat, true);
  // Read as one series (what a run judged by its thirds alone did), the restart looks like growth.
  const asOne = judgeRss(samples.map((s) => ({ ...s, pid: 1 })));
  assert.equal(asOne.flat, false);
});

test('memory that falls back after a burst is flat; growth past the tolerance is not', () => {
  // A restarted server's reconnection burst (seen: 173 → 429 MiB, then 311 MiB to the end).
  const burst = life('server', 12, 65, 195, (t) => (t < 120 ? 173 + (t - 65) * 4.6 : t < 135 ? 429 : 311));
  const judged = judgeRss(burst, { minSeconds: 45 });
  assert.ok((judged.lives[0]?.growth ?? 0) < -0.1);
  assert.equal(judged.flat, true);
  assert.equal(judgeRss(life('server', 13, 0, 180, (t) => 300 + t * 1.5)).flat, false, '1.5 MiB/s: +23 % from the middle third to the last');
  assert.equal(judgeRss(life('server', 14, 0, 180, (t) => 300 + t * 0.1)).flat, true, '0.1 MiB/s: +2 %');
});

test('a restarted process that grows is NOT flat, even when the first life was', () => {
  const samples = [...life('server', 10, 0, 60, () => 500), ...life('server', 11, 65, 200, (t) => 300 + (t - 65) * 3)];
  const judged = judgeRss(samples, { minSeconds: 45 });
  assert.equal(judged.lives[1]?.flat, false);
  assert.ok((judged.lives[1]?.growth ?? 0) > 0.1);
  assert.equal(judged.flat, false);
});

test('each node is judged apart; a life too short to judge is named, not counted; nothing judged is null', () => {
  const samples = [
    ...life('server', 10, 0, 180, () => 400),
    ...life('worker', 20, 0, 120, () => 150),
    ...life('worker', 21, 125, 150, (t) => 100 + t), // restarted near the end: 25 s
    { node: 'worker', pid: 21, atSeconds: 155, mib: Number.NaN },
  ];
  const judged = judgeRss(samples, { minSeconds: 45 });
  assert.deepEqual(judged.lives.map((l) => [l.node, l.pid, l.flat]), [['server', 10, true], ['worker', 20, true], ['worker', 21, null]]);
  assert.equal(judged.flat, true);
  assert.equal(judgeRss(life('server', 1, 0, 30, () => 1)).flat, null);
});
