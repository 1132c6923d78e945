/**
 * A call across a change of the tab that holds the shared device database
 * (client-lib/src/storage/leader-change.ts): reads are made again; a write whose outcome is
 * unknown is looked up first and made again only if it is not there. In Chromium:
 * browser-tabs.test.ts; here every order of outcomes, without a browser.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaderChangedError } from '@electric-sql/pglite/worker';
import fc from 'fast-check';
import { ATTEMPTS, readAcrossLeaders, writeAcrossLeaders } from '../../client-lib/src/storage/leader-change.ts';

test('a read is made again after a leader change, and answers', async () => {
  let calls = 0;
  const answer = await readAcrossLeaders(async () => {
    if (++calls < 3) throw new LeaderChangedError();
    return 'rows';
  });
  assert.equal(answer, 'rows');
  assert.equal(calls, 3);
});

test('a read fails at once for any other error, and after ATTEMPTS leader changes', async () => {
  let calls = 0;
  await assert.rejects(
    readAcrossLeaders(async () => {
      calls++;
      throw new Error('syntax error');
    }),
    /syntax error/,
  );
  assert.equal(calls, 1);
  calls = 0;
  await assert.rejects(
    readAcrossLeaders(async () => {
      calls++;
      throw new LeaderChangedError();
    }),
    LeaderChangedError,
  );
  assert.equal(calls, ATTEMPTS);
});

test('a write with no way to tell whether it was made rejects, and is not made again', async () => {
  let calls = 0;
  await assert.rejects(
    writeAcrossLeaders(async () => {
      calls++;
      throw new LeaderChangedError();
    }, undefined),
    LeaderChangedError,
  );
  assert.equal(calls, 1);
});

/**
 * What one try of the write meets: it commits and answers; it commits and its answer is lost;
 * it fails before committing; or it fails before committing and the lookup after it meets
 * another hand-over too.
 */
type Try = 'answered' | 'committed_unanswered' | 'lost_before_commit' | 'lookup_fails_once';

test('property: a write across leader changes is kept once when it resolves, and not at all when it rejects', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(fc.constantFrom<Try>('answered', 'committed_unanswered', 'lost_before_commit', 'lookup_fails_once'), { minLength: 1, maxLength: ATTEMPTS + 2 }), async (tries) => {
      const outbox: number[] = [];
      let nextId = 1;
      let attempt = 0;
      let lookupFailed = false;
      const run = async () => {
        const t = tries[Math.min(attempt++, tries.length - 1)]!;
        if (t === 'lost_before_commit' || t === 'lookup_fails_once') throw new LeaderChangedError();
        const id = nextId++;
        outbox.push(id);
        if (t === 'committed_unanswered') throw new LeaderChangedError();
        return id;
      };
      // The lookup's read, retried as every read of the device database is; it may meet a second hand-over.
      const made = () =>
        readAcrossLeaders(async () => {
          if (tries.includes('lookup_fails_once') && !lookupFailed) {
            lookupFailed = true;
            throw new LeaderChangedError();
          }
          return outbox[0] ?? null;
        });
      try {
        const id = await writeAcrossLeaders(run, made);
        assert.deepEqual(outbox, [id], 'resolved: kept once, under the id answered');
      } catch (err) {
        assert.ok(err instanceof LeaderChangedError, String(err));
        assert.equal(outbox.length, 0, 'rejected: nothing kept (a kept write is found)');
        assert.equal(attempt, ATTEMPTS, 'rejected only after every try');
      }
    }),
    { numRuns: 500 },
  );
});
