/**
 * The stop's undo list (server/src/shutdown-steps.ts), shared by the server's runtime and the
 * worker node: steps undone last first and once; a failing step named in the log and the
 * rest still undone; a step that drags named while it is still running — the only trace a
 * step that never ends leaves before the grace period's exit.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { shutdownSteps, type StepLog } from '../../server/src/shutdown-steps.ts';

interface Line {
  readonly fields: Record<string, unknown>;
  readonly msg: string;
  readonly at: number;
}

function recorder() {
  const lines: Line[] = [];
  const warn = (fields: Record<string, unknown>, msg: string) => void lines.push({ fields, msg, at: performance.now() });
  return { lines, log: { warn } as unknown as StepLog };
}

test('steps are undone last first, once, and a failing one is named while the rest still run', async () => {
  const { lines, log } = recorder();
  const steps = shutdownSteps(() => log, 1000);
  const undone: string[] = [];
  steps.add('database', async () => void undone.push('database'));
  steps.add('job queue pool', async () => {
    undone.push('job queue pool');
    throw new Error('pool end failed for "Jane Roe" <jane.roe@example.com>');
  });
  steps.add('http and sync', async () => void undone.push('http and sync'));
  assert.equal(steps.elapsedMs(), 0, 'no time has passed before the stop');
  const first = steps.run();
  assert.equal(steps.run(), first, 'a second stop waits for the first');
  await first;
  await steps.run();
  assert.deepEqual(undone, ['http and sync', 'job queue pool', 'database']);
  assert.equal(lines.length, 1);
  assert.equal(lines[0]?.msg, 'shutdown step failed');
  assert.equal(lines[0]?.fields.step, 'job queue pool');
  assert.ok(!JSON.stringify(lines[0]?.fields).includes('Jane Roe') && !JSON.stringify(lines[0]?.fields).includes('jane.roe@'), 'the cause is logged redacted (safeError)');
});

test('a step that drags is named while it runs, and again with its time when it ends', async () => {
  const { lines, log } = recorder();
  const steps = shutdownSteps(() => log, 100);
  let ended = 0;
  steps.add('database', async () => undefined);
  steps.add('http and sync', async () => {
    await sleep(400);
    ended = performance.now();
  });
  await steps.run();
  const still = lines.find((l) => l.msg === 'shutdown step still running');
  const slow = lines.find((l) => l.msg === 'shutdown step was slow');
  assert.equal(still?.fields.step, 'http and sync');
  assert.ok(still && still.at < ended, 'named before it ended');
  assert.ok(Number(still?.fields.ms) >= 90, `named after the slow bound (${String(still?.fields.ms)} ms)`);
  assert.equal(slow?.fields.step, 'http and sync');
  assert.ok(Number(slow?.fields.ms) >= 390, `with its whole time (${String(slow?.fields.ms)} ms)`);
  assert.equal(lines.length, 2, 'the quick step is not logged');
});

test('a step that never ends is named before the process gives up on it', async () => {
  const { lines, log } = recorder();
  const steps = shutdownSteps(() => log, 50);
  steps.add('http and sync', () => new Promise<void>(() => undefined));
  void steps.run();
  await sleep(300);
  assert.deepEqual(
    lines.map((l) => [l.msg, l.fields.step]),
    [['shutdown step still running', 'http and sync']],
  );
});
