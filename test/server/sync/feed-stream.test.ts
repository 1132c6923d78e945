/**
 * A full read streams: `eachRow` hands a statement's rows over as they come off the wire on
 * PostgreSQL (the feed builds and sends the first while the database reads the rest), in
 * order on both databases, and an error in the handler stops the handover and surfaces once
 * the statement is done; `FeedFrames` cuts the changes into the protocol's frames as they
 * arrive; a device that pauses during a first sync bigger than the socket's send bound is
 * still answered, since the feed's own frames do not count against it.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { sql } from 'drizzle-orm';
import { randomUUID } from 'node:crypto';
import { forEachBackend, type TestDatabase } from '../../helpers/backends.ts';
import { eventually } from '../../helpers/eventually.ts';
import { helloSync, nextFeed } from '../../helpers/sync-socket.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { rowsOf } from '../../../server/src/db/database.ts';
import { eachRow } from '../../../server/src/db/each-row.ts';
import { FeedFrames } from '../../../server/src/sync/feed-frames.ts';

forEachBackend('eachRow', (backend) => {
  let t: TestDatabase;
  before(async () => {
    t = await backend.open();
  });
  after(() => t.drop());

  test('hands every row over in order, inside a transaction too', async () => {
    const seen: number[] = [];
    await eachRow<{ n: number }>(t.database.db, sql`select n::int as n from generate_series(1, 2000) n order by n`, (r) => seen.push(r.n));
    assert.deepEqual(seen, Array.from({ length: 2000 }, (_, i) => i + 1));
    const inTx = await t.database.db.transaction(async (tx) => {
      const got: string[] = [];
      await eachRow<{ s: string }>(tx, sql`select ${'a'}::text as s union all select ${'b'}::text`, (r) => got.push(r.s));
      return got;
    });
    assert.deepEqual(inTx, ['a', 'b']);
  });

  test('a handler that throws stops the handover; the error surfaces and the connection serves the next statement', async () => {
    const seen: number[] = [];
    await assert.rejects(
      eachRow<{ n: number }>(t.database.db, sql`select n::int as n from generate_series(1, 3000) n order by n`, (r) => {
        seen.push(r.n);
        if (r.n === 7) throw new Error('bad row');
      }),
      /bad row/,
    );
    assert.deepEqual(seen, [1, 2, 3, 4, 5, 6, 7]);
    const [row] = rowsOf<{ one: number }>(await t.database.db.execute(sql`select 1 as one`));
    assert.equal(Number(row?.one), 1);
  });

  if (backend.name === 'postgres') {
    test('the first rows are handed over while the database is still producing the rest', async () => {
      // Rows of 64 KiB leave PostgreSQL's output buffer one by one; the last waits 600 ms.
      const started = performance.now();
      let firstAt = 0;
      await eachRow<{ n: number }>(
        t.database.db,
        sql`select n::int as n, repeat('x', 65536) as pad, case when n = 5 then pg_sleep(0.6) end as slept from generate_series(1, 5) n`,
        (r) => {
          if (r.n === 1) firstAt = performance.now() - started;
        },
      );
      const total = performance.now() - started;
      assert.ok(total >= 600, `the statement took ${total} ms`);
      assert.ok(firstAt > 0 && firstAt < total - 400, `the first row came at ${firstAt.toFixed(0)} ms of ${total.toFixed(0)} ms`);
    });
  }
});

test('FeedFrames: frames of at most 500 changes and 1 MiB, in order, the checkpoint on the last only', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1, max: 300_000 }), { maxLength: 1200 }), (sizes) => {
      const changes = sizes.map((size, i) => JSON.stringify({ i, pad: 'é'.repeat(Math.floor(size / 2)) }));
      const frames: string[] = [];
      const cut = new FeedFrames((frame) => frames.push(frame));
      for (const c of changes) cut.add(c);
      frames.push(cut.last('v1.cursor'));
      const parsed = frames.map((f) => JSON.parse(f) as { type: string; changes: unknown[]; checkpoint: string | null; more: boolean });
      assert.deepEqual(
        parsed.flatMap((f) => f.changes),
        changes.map((c) => JSON.parse(c)),
      );
      parsed.forEach((f, i) => {
        const last = i === parsed.length - 1;
        assert.equal(f.type, 'changes');
        assert.equal(f.checkpoint, last ? 'v1.cursor' : null);
        assert.equal(f.more, !last);
        assert.ok(f.changes.length <= 500);
        // A change bigger than a frame travels alone.
        const bytes = f.changes.reduce<number>((sum, c) => sum + Buffer.byteLength(JSON.stringify(c)), 0);
        assert.ok(bytes <= 1024 * 1024 || f.changes.length === 1, `a frame of ${bytes} bytes`);
        if (!last) assert.ok(f.changes.length > 0);
      });
    }),
    { numRuns: 60 },
  );
  const empty = new FeedFrames(() => assert.fail('no frame before the last'));
  assert.deepEqual(JSON.parse(empty.last('c')), { type: 'changes', changes: [], checkpoint: 'c', more: false });
});

forEachBackend('a first sync bigger than the send bound', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('a mutation answered while 25 MB of feed frames wait unread does not drop the device', async () => {
    const user = await registerUser(server);
    // 2,500 notifications of 10 kB: a first sync of about 25 MB. What the kernel's socket buffers
    // do not hold (a few MB on loopback) stays in the server's send buffer, past the 16 MiB a
    // device may leave unread.
    await server.runtime.database.db.execute(
      sql`insert into notifications (id, owner_id, type, title, body, data, created_at)
          select gen_random_uuid(), ${user.uuid}::uuid, 'note_ready', 'Your note is ready', repeat('x', 10000), '{}'::jsonb, now() from generate_series(1, 2500)`,
    );
    const clientId = randomUUID();
    const { socket } = await helloSync(server, user.token, clientId);
    // The device stops reading: the frames pile up in the server's send buffer. Waited for as
    // the server sees it — megabytes buffered, and no more coming (the feed has handed over all
    // its frames) — so that the ack below is sent behind them whatever the machine's load.
    socket.ws.pause();
    const { clients } = server.runtime.app.websocketServer;
    let previous = -1;
    await eventually(
      () => {
        const buffered = Math.max(0, ...[...clients].map((c) => c.bufferedAmount));
        const still = buffered === previous;
        previous = buffered;
        assert.ok(buffered > 16 * 1024 * 1024 && still, `${buffered} bytes buffered`);
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    socket.send({ type: 'mutation', mutation_id: 1, name: 'patient.create', args: { uuid: randomUUID(), first_name: 'Ada', last_name: 'Quince' }, client_time: new Date().toISOString() });
    // Applied and answered (the ack goes out right after the commit), still unread.
    await eventually(
      async () => {
        const rows = rowsOf<{ last: number }>(
          await server.runtime.database.db.execute(sql`select last_mutation_id::int as last from sync_clients where client_id = ${clientId}::uuid`),
        );
        assert.equal(rows[0]?.last, 1);
      },
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    await new Promise((r) => setTimeout(r, 100));
    let closed = false;
    void socket.closed.then(() => (closed = true));
    socket.ws.resume();
    const feed = await nextFeed(socket, 60_000);
    assert.equal(feed.changes.filter((c) => c.table === 'notifications').length, 2500);
    const ack = await socket.next('ack', (m) => m.mutation_id === 1, 30_000);
    assert.equal(ack.mutation_id, 1);
    assert.equal(closed, false, 'the socket stayed open');
    socket.close();
  });
});
