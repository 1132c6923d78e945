/**
 * PostgreSQL resetting a connection while postgres.js sets it up. On every new connection the
 * driver first reads the array types (`fetch_types`), with a query of its own that nobody
 * awaits: a reset at that moment rejected it unhandled, and an unhandled rejection ends a Node
 * process — the server died of a network blip (patches/README.md). A proxy here resets the
 * first connections exactly when that query goes out.
 *
 * PostgreSQL only: the embedded database has no connection to lose.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { openDatabase, type Database } from '../../server/src/db/database.ts';
import { isDatabaseUnreachable } from '../../server/src/db/reachability.ts';
import { backends, type TestBackend, type TestDatabase } from '../helpers/backends.ts';

const postgresBackend = backends.find((b) => b.name === 'postgres');

describe('a connection reset while the driver sets it up [postgres]', { skip: postgresBackend ? false : 'needs TEST_DATABASE_URL' }, () => {
  let real: TestDatabase;
  let proxy: net.Server;
  let database: Database;
  /** Connections still to reset when their types query goes out. */
  let resets = 0;
  let resetDone = 0;
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);

  before(async () => {
    process.on('unhandledRejection', onUnhandled);
    real = await (postgresBackend as TestBackend).open();
    const target = new URL(real.url as string);
    proxy = net.createServer((client) => {
      const upstream = net.connect(Number(target.port || 5432), target.hostname);
      let reset = false;
      client.on('data', (chunk: Buffer) => {
        if (!reset && resets > 0 && chunk.includes('pg_catalog.pg_type')) {
          resets--;
          resetDone++;
          reset = true;
          client.resetAndDestroy();
          upstream.destroy();
          return;
        }
        if (!reset) upstream.write(chunk);
      });
      upstream.on('data', (chunk: Buffer) => void (reset || client.write(chunk)));
      client.on('error', () => {}).on('close', () => upstream.destroy());
      upstream.on('error', () => {}).on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxied = new URL(real.url as string);
    proxied.host = `127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
    database = await openDatabase({ kind: 'postgres', url: proxied.toString(), poolSize: 2 });
  });
  after(async () => {
    await database?.close();
    await new Promise((resolve) => proxy?.close(resolve));
    await real?.drop();
    process.off('unhandledRejection', onUnhandled);
  });

  test('the waiting query fails as "database unreachable", nothing is left unhandled, and the next query connects again', async () => {
    resets = 1;
    const first = await database.db.execute(sql`select 1 as one`).then(
      () => null,
      (err: unknown) => err,
    );
    assert.equal(resetDone, 1, 'the proxy reset the connection at the types query');
    assert.ok(first, 'the query on the reset connection fails');
    assert.ok(isDatabaseUnreachable(first), `a lost connection, answered 503: ${String(first)}`);
    const again = (await database.db.execute(sql`select 2 as two`)) as unknown as Array<{ two: number }>;
    assert.equal(again[0]?.two, 2);
    // An unhandled rejection is reported on a later turn of the event loop.
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(unhandled.map(String), [], 'no unhandled rejection');
  });
});
