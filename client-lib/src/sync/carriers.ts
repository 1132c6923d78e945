/**
 * The uploader's two ways to the server: frames on the open socket (answers come back on
 * it), and `POST /sync/mutations` for a network that passes HTTP but not websockets (answers
 * come back in the response). The same mutations, answered the same way, on the server's same
 * exactly-once counter.
 */
import { PROTOCOL_VERSION } from '@fieldchart/schema/sync';
import type { RestClient } from '../rest/index.ts';
import type { Connection } from './connection.ts';
import { DEFAULT_WINDOW, type Carrier } from './uploader.ts';

/** Bytes of mutations per `POST /sync/mutations` (the route takes up to MAX_MUTATION_BYTES + 1 MiB). */
const HTTP_BATCH_BYTES = 1024 * 1024;

/**
 * Mutation frames on a welcomed socket; `settleAfter` is the feed's rule for this socket, and
 * `window` the unanswered mutations its `welcome` allows (protocol 3's `max_in_flight`).
 */
export function socketCarrier(conn: Connection, settleAfter: (duplicate: boolean) => number | null, window = DEFAULT_WINDOW): Carrier {
  return {
    batchBytes: Number.POSITIVE_INFINITY,
    window,
    send(batch) {
      let sent = 0;
      for (const m of batch) {
        if (!conn.send({ type: 'mutation', ...m })) break;
        sent++;
      }
      return Promise.resolve({ sent, answers: [] });
    },
    settleAfter,
  };
}

/**
 * `POST /sync/mutations` under the install's client id as it is when the request leaves (a
 * re-keyed outbox goes on under its new one). An ack here settles at the next socket's first
 * `synced`, whose feed run began after it — or, when the answer comes after a socket was
 * welcomed, at the `synced` of the full run the server's poke of that request starts.
 */
export function httpCarrier(rest: RestClient, clientId: () => Promise<string>, onRefused: (err: unknown) => void = () => {}): Carrier {
  return {
    batchBytes: HTTP_BATCH_BYTES,
    window: DEFAULT_WINDOW,
    async send(batch, signal) {
      try {
        const { results } = await rest.sync.applyMutations({ client_id: await clientId(), protocol: PROTOCOL_VERSION, mutations: batch.map((m) => ({ ...m })) }, { signal });
        return { sent: batch.length, answers: results };
      } catch (err) {
        // Let go (a socket took over): not a refusal, and nobody waits for the answer.
        if (signal.aborted) throw err;
        // The engine decides whether a refusal ends the session (a revoked device); the
        // uploader treats it as any failed send.
        onRefused(err);
        throw err;
      }
    },
    settleAfter: () => null,
  };
}
