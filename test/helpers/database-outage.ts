/**
 * What the "database away" suites share (database-away.test.ts cuts PostgreSQL's connections,
 * postgres-restart.test.ts stops the server itself): the bounds, a request timed from the
 * client's side, the 503 every request must answer while the database is away, and the wait
 * for the server to say it is ready again.
 */
import assert from 'node:assert/strict';
import { eventually } from './eventually.ts';
import { API } from './test-server.ts';

/** No request may take longer than this while the database is away. */
export const ANSWER_BOUND_MS = 5_000;
/** Requests in flight when the outage begins may end either way; from this long after, only 503. */
export const SETTLE_MS = 500;
/**
 * From /readyz 200 (its own fresh connection) until the API is open again: the gate's next
 * probe (every 500 ms while away) and the pool's reconnect (at most 1 s after a failure).
 */
export const REOPEN_MS = 1500;

export interface Outcome {
  readonly label: string;
  readonly startedAt: number;
  readonly ms: number;
  /** 0: no answer (a hang past three times the bound, or a dropped connection). */
  readonly status: number;
  readonly body: any;
}

/** One API request, timed; never throws (a failure to answer is status 0). */
export async function timedRequest(
  baseUrl: string,
  label: string,
  method: string,
  path: string,
  token: string,
  opts: { body?: unknown; key?: string } = {},
): Promise<Outcome> {
  const startedAt = performance.now();
  const headers: Record<string, string> = { accept: 'application/json', authorization: `Bearer ${token}` };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (opts.key) headers['idempotency-key'] = opts.key;
  try {
    const res = await fetch(`${baseUrl}${API}${path}`, {
      method,
      headers,
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
      signal: AbortSignal.timeout(ANSWER_BOUND_MS * 3),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // kept as text: the assertion shows it
    }
    return { label, startedAt, ms: performance.now() - startedAt, status: res.status, body: parsed };
  } catch (err) {
    return { label, startedAt, ms: performance.now() - startedAt, status: 0, body: String(err) };
  }
}

/** Every request started after `from` + SETTLE_MS and answered before `until`: 503 `database_unavailable` in the contract's shape, within the bound. */
export function assertAwayAnswers(outcomes: readonly Outcome[], from: number, until: number): void {
  const whileAway = outcomes.filter((o) => o.startedAt > from + SETTLE_MS && o.startedAt + o.ms < until);
  assert.ok(whileAway.length >= 40, `requests answered while away: ${whileAway.length}`);
  for (const o of whileAway) {
    assert.equal(o.status, 503, `${o.label}: ${o.status} ${JSON.stringify(o.body)}`);
    assert.deepEqual(o.body, { status: false, message: o.body.message, code: 'database_unavailable' }, o.label);
    assert.equal(typeof o.body.message, 'string');
    assert.ok(o.ms < ANSWER_BOUND_MS, `${o.label} took ${Math.round(o.ms)} ms`);
  }
}

/** Waits for /readyz 200 (the server came back by itself) and answers when it did. */
export async function readyAgain(serverUrl: string, timeoutMs: number): Promise<number> {
  await eventually(
    async () => {
      const r = await fetch(`${serverUrl}/readyz`);
      assert.equal(r.status, 200);
    },
    { timeoutMs, intervalMs: 200 },
  );
  return performance.now();
}
