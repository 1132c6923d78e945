/**
 * The HTTP server's part of a stop, within a deadline. Fastify's close waits for every request
 * in flight, and one can take as long as REQUEST_TIMEOUT_MS (a phone trickling an upload on a
 * rural road) or an outside service's timeout; past SHUTDOWN_GRACE_MS the process exits 1
 * without closing its database. At the deadline the connections still open are closed: those
 * requests were never answered, so the app sends them again (nothing it was told was kept is
 * lost), and the rest of the stop runs.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';

export async function closeAppWithin(app: FastifyInstance, withinMs: number): Promise<void> {
  const deadline = new AbortController();
  void sleep(Math.max(0, withinMs), undefined, { signal: deadline.signal }).then(
    () => {
      app.log.warn({ within_ms: Math.round(withinMs) }, 'requests still in flight when the stop ran out of time; their connections are closed');
      app.server.closeAllConnections();
    },
    () => undefined,
  );
  try {
    await app.close();
  } finally {
    deadline.abort();
  }
}
