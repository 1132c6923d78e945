/**
 * The job queue's pool once ended: graphile-worker may still be retrying a job's completion
 * (it does not await it) when a node shuts down. The retry's next connection must neither
 * succeed nor reject — a rejection there is unhandled and ends the process (seen in
 * postgres-restart.test.ts as "Cannot use a pool after calling end on the pool").
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { openJobQueuePool } from '../../server/src/jobs/job-queue-pool.ts';
import { forEachBackend } from '../helpers/backends.ts';
import { startTestServer, type TestServer } from '../helpers/test-server.ts';

forEachBackend('job queue pool', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server?.close());

  test('once ended, a connection asked for (promise or callback, or through query) is never answered, and nothing is rejected', async () => {
    const { config, database } = server.runtime;
    const pool = openJobQueuePool(config, database, 2);
    const { rows } = await pool.query<{ one: number }>('select 1 as one');
    assert.equal(rows[0]?.one, 1);
    await pool.end();

    const rejected: unknown[] = [];
    const onUnhandled = (err: unknown) => rejected.push(err);
    process.on('unhandledRejection', onUnhandled);
    try {
      const answers: string[] = [];
      void pool.connect().then(() => answers.push('connect resolved'), () => answers.push('connect rejected'));
      void pool.query('select 1').then(() => answers.push('query resolved'), () => answers.push('query rejected'));
      pool.connect((err) => answers.push(err ? 'callback with error' : 'callback with client'));
      // As graphile-worker does: a promise nobody handles.
      void pool.connect();
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(answers, []);
      assert.deepEqual(rejected, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
