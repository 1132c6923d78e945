/**
 * Which errors mean "the database is away" (503, not 500), and the probe's bound: a probe of a
 * database that refuses, drops or never answers rejects within its timeout. No database is
 * needed: the unreachable ends are local sockets.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, test } from 'node:test';
import { DrizzleQueryError } from 'drizzle-orm';
import { isDatabaseUnreachable, probePostgres, withinMs } from '../../server/src/db/reachability.ts';
import { freePort } from '../helpers/processes.ts';

const withCode = (code: string, message = 'boom') => Object.assign(new Error(message), { code });
/** How postgres.js tags a socket error with the query it failed (non-enumerable). */
const tagged = (err: Error, query: string) => Object.defineProperty(err, 'query', { value: query, enumerable: false });

describe('database reachability', () => {
  test('lost connections and shutting-down servers count; an errno counts only from a query', () => {
    assert.equal(isDatabaseUnreachable(withCode('CONNECTION_CLOSED')), true);
    assert.equal(isDatabaseUnreachable(withCode('CONNECT_TIMEOUT')), true);
    assert.equal(isDatabaseUnreachable(new DrizzleQueryError('select 1', [], withCode('CONNECTION_DESTROYED'))), true);
    assert.equal(isDatabaseUnreachable(new DrizzleQueryError('select 1', [], withCode('57P01'))), true, 'admin shutdown');
    assert.equal(isDatabaseUnreachable(new DrizzleQueryError('select 1', [], withCode('57P03'))), true, 'starting up');
    assert.equal(isDatabaseUnreachable(withCode('08006')), true, 'connection failure');
    assert.equal(isDatabaseUnreachable(new DrizzleQueryError('select 1', [], withCode('ECONNRESET'))), true);
    assert.equal(isDatabaseUnreachable(tagged(withCode('ECONNRESET'), 'begin')), true);
    // Not the database's absence:
    assert.equal(isDatabaseUnreachable(withCode('ECONNRESET')), false, 'a reset from some other service');
    assert.equal(isDatabaseUnreachable(new DrizzleQueryError('insert', [], withCode('23505'))), false);
    assert.equal(isDatabaseUnreachable(new DrizzleQueryError('select', [], withCode('57014'))), false, 'statement timeout');
    assert.equal(isDatabaseUnreachable(new Error('CONNECTION_CLOSED')), false);
    assert.equal(isDatabaseUnreachable(null), false);
  });

  test('the probe rejects within its bound: refused, accepted then dropped, accepted and silent', async () => {
    const refused = `postgres://postgres@127.0.0.1:${await freePort()}/x`;
    const sockets = new Set<net.Socket>();
    const dropping = net.createServer((s) => s.destroy());
    const silent = net.createServer((s) => sockets.add(s));
    await Promise.all([dropping, silent].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r))));
    const urlOf = (s: net.Server) => `postgres://postgres@127.0.0.1:${(s.address() as net.AddressInfo).port}/x`;
    try {
      for (const url of [refused, urlOf(dropping), urlOf(silent)]) {
        const started = performance.now();
        await assert.rejects(probePostgres(url, 400));
        assert.ok(performance.now() - started < 1500, `${url}: ${Math.round(performance.now() - started)} ms`);
      }
    } finally {
      for (const s of sockets) s.destroy();
      await Promise.all([dropping, silent].map((s) => new Promise((r) => s.close(r))));
    }
  });

  test('a bound a blocked event loop overran does not call an answer that came meanwhile a timeout', async () => {
    // The answer comes 20 ms after the loop is free again, as a healthy database's would when
    // the device's PGlite held this thread through the whole bound.
    const server = net.createServer((s) => setTimeout(() => s.end('ok'), 20));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const socket = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    try {
      const answer = new Promise<string>((resolve) => socket.on('data', (d) => resolve(String(d))));
      const bounded = withinMs(answer, 200);
      const until = Date.now() + 600;
      while (Date.now() < until) {
        // the loop is held, as by seconds of synchronous WASM
      }
      assert.equal(await bounded, 'ok');
    } finally {
      socket.destroy();
      await new Promise((r) => server.close(r));
    }
  });
});
