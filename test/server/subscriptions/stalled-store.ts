/**
 * What both stores' suites check of a store that takes a request and never answers: the
 * verification answers 503 `store_unavailable` once STORE_TIMEOUT_MS has passed, nothing is
 * granted, and the same purchase verifies once the store answers again.
 */
import assert from 'node:assert/strict';

/** Short, so that the stalled-store tests are quick; a working stand-in answers in milliseconds. */
export const STORE_TIMEOUT_MS = 2000;

export async function assertStalledStoreRefusesThenVerifies(opts: {
  stall(on: boolean): void;
  verify(): Promise<{ status: number; body: { code?: string } }>;
  subscriptionStatus(): Promise<string>;
}): Promise<void> {
  opts.stall(true);
  let res;
  const started = performance.now();
  try {
    res = await opts.verify();
  } finally {
    opts.stall(false);
  }
  const ms = performance.now() - started;
  assert.equal(res.status, 503, JSON.stringify(res.body));
  assert.equal(res.body.code, 'store_unavailable');
  assert.ok(ms >= STORE_TIMEOUT_MS * 0.9 && ms < STORE_TIMEOUT_MS + 3000, `answered after ${ms.toFixed(0)} ms`);
  assert.equal(await opts.subscriptionStatus(), 'trial');
  assert.equal((await opts.verify()).status, 200);
  assert.equal(await opts.subscriptionStatus(), 'active');
}
