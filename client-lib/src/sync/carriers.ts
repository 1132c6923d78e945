/**
 * The uploader's two ways to the server: frames on the open socket (answers come back on
 * it), and `POST /sync/mutations` for a network that passes HTTP but not websockets (answers
 * come back in the response). The same mutations, answered the same way, on the server's same
 * exactly-once counter.
 */
import { ItemFrames, MUTATIONS_FRAMES_FROM, PROTOCOL_VERSION, type FrameLimits } from '@fieldchart/schema/sync';
import type { RestClient } from '../rest/index.ts';
import type { Connection } from './connection.ts';
import { DEFAULT_WINDOW, type Carrier, type OutgoingMutation } from './uploader.ts';

/** Bytes of mutations per `POST /sync/mutations` (the route takes up to MAX_MUTATION_BYTES + 1 MiB). */
const HTTP_BATCH_BYTES = 1024 * 1024;

/**
 * A `mutations` frame: 500 mutations at most (the server takes up to 1,000), and 1 Mi UTF-16
 * units of their JSON — at most 3 bytes each in UTF-8, so a frame stays under the socket's 4 MiB.
 */
const MUTATIONS_FRAME: FrameLimits = { maxItems: 500, maxSize: 1024 * 1024, size: (json) => json.length };

/**
 * Mutations on a welcomed socket: from protocol 5 (`spoken`, the welcome's) together in
 * `mutations` frames, before one frame each. `settleAfter` is the feed's rule for this socket,
 * and `window` the unanswered mutations its `welcome` allows (protocol 3's `max_in_flight`).
 */
export function socketCarrier(conn: Connection, settleAfter: (duplicate: boolean) => number | null, window = DEFAULT_WINDOW, spoken = 1): Carrier {
  return {
    batchBytes: Number.POSITIVE_INFINITY,
    window,
    send(batch) {
      const sent = spoken >= MUTATIONS_FRAMES_FROM ? sendTogether(conn, batch) : sendEach(conn, batch);
      return Promise.resolve({ sent, answers: [] });
    },
    settleAfter,
  };
}

/** One frame per mutation; how many went out. */
function sendEach(conn: Connection, batch: readonly OutgoingMutation[]): number {
  let sent = 0;
  for (const m of batch) {
    if (!conn.send({ type: 'mutation', ...m })) break;
    sent++;
  }
  return sent;
}

/** `mutations` frames cut by count and length, in order; how many mutations went out (the frames before the first that did not). */
function sendTogether(conn: Connection, batch: readonly OutgoingMutation[]): number {
  let sent = 0;
  let open = true;
  const frames = new ItemFrames(
    MUTATIONS_FRAME,
    (items) => `{"type":"mutations","mutations":[${items}]}`,
    (frame, items) => {
      open &&= conn.sendText(frame);
      if (open) sent += items;
    },
  );
  for (const m of batch) {
    frames.add(JSON.stringify({ type: 'mutation', ...m }));
    if (!open) return sent;
  }
  frames.flush();
  return sent;
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
