/**
 * The API's gate in front of PostgreSQL (http/database-gate.ts) on its own: a Fastify app with
 * the gate and the project's error handling, a probe the test answers, and a route that waits
 * until the test lets it go — so the timing of "away", "back" and "slow" is the test's, not a
 * real outage's (database-away.test.ts has the real one).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { databaseGate } from '../../server/src/http/database-gate.ts';
import { installErrorHandling } from '../../server/src/http/error-handler.ts';

const SUSPECT_MS = 100;
const RECHECK_MS = 50;

describe('database gate', () => {
  let app: FastifyInstance;
  let url: string;
  /** What the next probes answer; each probe is counted. */
  let reachable = true;
  let probes = 0;
  /** A probe answers only when the test says so (a probe that was slow to connect). */
  let holdProbes: Array<() => void> | null = null;
  const releases = new Set<() => void>();

  /** The app's warn lines, as JSON. */
  const logged: Array<Record<string, unknown>> = [];
  before(async () => {
    app = Fastify({ logger: { level: 'warn', stream: { write: (line: string) => void logged.push(JSON.parse(line)) } } });
    installErrorHandling(app);
    await app.register(databaseGate, {
      suspectAfterMs: SUSPECT_MS,
      recheckMs: RECHECK_MS,
      reportAfterMs: SUSPECT_MS * 2.5,
      probe: async () => {
        probes++;
        const answer = reachable;
        if (holdProbes) await new Promise<void>((resolve) => holdProbes?.push(resolve));
        if (!answer) throw new Error('unreachable');
      },
    });
    app.get('/wait', () => new Promise((resolve) => releases.add(() => resolve({ ok: true }))));
    app.get('/now', async () => ({ ok: true }));
    url = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    for (const release of releases) release();
    await app.close();
  });

  const get = async (path: string) => {
    const started = performance.now();
    const res = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(10_000) });
    return { status: res.status, body: await res.json(), ms: performance.now() - started };
  };
  const releaseAll = () => {
    for (const release of releases) release();
    releases.clear();
  };
  const reset = () => {
    releaseAll();
    reachable = true;
    probes = 0;
    holdProbes = null;
  };

  test('a request still unanswered is answered 503 in the contract shape once a probe fails, and the next at once until the database is back', async () => {
    reset();
    reachable = false;
    const waiting = await get('/wait');
    assert.equal(waiting.status, 503);
    assert.deepEqual(waiting.body, { status: false, message: waiting.body.message, code: 'database_unavailable' });
    assert.ok(waiting.ms >= SUSPECT_MS, `answered after ${Math.round(waiting.ms)} ms`);
    const next = await get('/now');
    assert.equal(next.status, 503);
    assert.ok(next.ms < SUSPECT_MS, 'while away, at once');
    reachable = true;
    // The gate rechecks by itself every RECHECK_MS: open again without a restart.
    const deadline = performance.now() + 2_000;
    let status = 503;
    while (status === 503 && performance.now() < deadline) {
      await new Promise((r) => setTimeout(r, RECHECK_MS));
      status = (await get('/now')).status;
    }
    assert.equal(status, 200);
  });

  test('a slow request on a reachable database is left to finish, however long it takes', async () => {
    reset();
    const pending = get('/wait');
    const deadline = performance.now() + 5_000;
    while (probes < 3 && performance.now() < deadline) await new Promise((r) => setTimeout(r, SUSPECT_MS));
    assert.ok(probes >= 3, `looked at again while unanswered: ${probes} probes`);
    releaseAll();
    const answer = await pending;
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, { ok: true });
    // Reported once, by its route pattern, for an operator to see what is stuck.
    const reports = logged.filter((l) => l.msg === 'request still unanswered while the database answers');
    assert.equal(reports.length, 1, JSON.stringify(logged));
    assert.equal(reports[0]?.route, '/wait');
    assert.equal(reports[0]?.method, 'GET');
    assert.ok(Number(reports[0]?.elapsed_ms) >= SUSPECT_MS * 2.5);
  });

  test('many slow requests share one probe per period instead of opening a connection each', async () => {
    reset();
    const pending = Array.from({ length: 20 }, () => get('/wait'));
    await new Promise((r) => setTimeout(r, SUSPECT_MS * 6));
    // Twenty requests looking every SUSPECT_MS for six periods: about a hundred looks, each its
    // own probe without sharing (a loaded machine spreads the requests' arrivals: room for that).
    assert.ok(probes >= 2 && probes <= 40, `probes: ${probes}`);
    releaseAll();
    for (const answer of await Promise.all(pending)) assert.equal(answer.status, 200);
  });

  test('one probe that said "reachable" (opened just before the database went) does not leave a request waiting for the whole outage', async () => {
    reset();
    // A probe is under way, slow to connect, while the database is still there.
    holdProbes = [];
    const pending = get('/wait');
    await new Promise((r) => setTimeout(r, SUSPECT_MS * 1.5));
    assert.equal(probes, 1, 'the request made the gate look');
    // The database goes; the probe opened before answers "reachable" late.
    reachable = false;
    const held = holdProbes;
    holdProbes = null;
    for (const answer of held) answer();
    const answer = await pending;
    assert.equal(answer.status, 503, JSON.stringify(answer.body));
    assert.equal(answer.body.code, 'database_unavailable');
    // At the next look (SUSPECT_MS later), not when the test's 10 s run out.
    assert.ok(answer.ms < 3_000, `answered after ${Math.round(answer.ms)} ms`);
    assert.ok(probes >= 2);
  });
});
