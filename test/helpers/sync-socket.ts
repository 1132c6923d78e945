/**
 * A bare sync-channel peer for server tests: a real websocket speaking the protocol's JSON
 * frames, with a queue to await server messages by type.
 */
import { WebSocket } from 'ws';
import { serverMessage, type ServerMessage } from '@fieldchart/schema/sync';
import { API, type TestServer } from './test-server.ts';

export interface SyncSocket {
  readonly ws: WebSocket;
  /** Every message received so far, in order. */
  readonly received: ServerMessage[];
  send(message: unknown): void;
  sendRaw(text: string): void;
  /** The next not-yet-taken message matching `type` (and `where`), waiting up to `timeoutMs`. */
  next<T extends ServerMessage['type']>(type: T, where?: (m: Extract<ServerMessage, { type: T }>) => boolean, timeoutMs?: number): Promise<Extract<ServerMessage, { type: T }>>;
  /** Resolves with the close code the server sent. */
  readonly closed: Promise<{ code: number; reason: string }>;
  close(): void;
}

export function syncUrl(server: TestServer): string {
  return `${server.url.replace(/^http/, 'ws')}${API}/sync`;
}

export async function openSync(server: TestServer | string): Promise<SyncSocket> {
  const ws = new WebSocket(typeof server === 'string' ? server : syncUrl(server));
  const received: ServerMessage[] = [];
  const taken = new Set<number>();
  const waiters: Array<() => void> = [];
  let closedWith: { code: number; reason: string } | null = null;
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => {
      closedWith = { code, reason: reason.toString() };
      resolve(closedWith);
      for (const w of waiters.splice(0)) w();
    }),
  );
  ws.on('message', (data) => {
    received.push(serverMessage.parse(JSON.parse(String(data))));
    for (const w of waiters.splice(0)) w();
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  return {
    ws,
    received,
    send: (message) => ws.send(JSON.stringify(message)),
    sendRaw: (text) => ws.send(text),
    closed,
    close: () => ws.close(1000),
    next<T extends ServerMessage['type']>(type: T, where?: (m: Extract<ServerMessage, { type: T }>) => boolean, timeoutMs = 10_000) {
      type M = Extract<ServerMessage, { type: T }>;
      return new Promise<M>((resolve, reject) => {
        const deadline = setTimeout(() => reject(new Error(`no ${type} message within ${timeoutMs} ms; got ${received.map((m) => m.type).join(',')}`)), timeoutMs);
        const look = () => {
          for (const [i, m] of received.entries()) {
            if (taken.has(i) || m.type !== type || (where && !where(m as M))) continue;
            taken.add(i);
            clearTimeout(deadline);
            return resolve(m as M);
          }
          if (closedWith) {
            clearTimeout(deadline);
            return reject(new Error(`socket closed (${closedWith.code} ${closedWith.reason}) before a ${type} message`));
          }
          waiters.push(look);
        };
        look();
      });
    },
  };
}

/** Opens a socket and says hello (protocol 1 unless told); answers the socket and the welcome. */
export async function helloSync(server: TestServer | string, token: string, clientId: string, cursor: string | null = null, protocol: number | { protocol?: number } = 1) {
  const socket = await openSync(server);
  socket.send({ type: 'hello', protocol: typeof protocol === 'number' ? protocol : (protocol.protocol ?? 1), token, client_id: clientId, cursor });
  const welcome = await socket.next('welcome');
  return { socket, welcome };
}

/** Collects the changes of one feed run: from the next changes message to its checkpoint, then `synced`. */
export async function nextFeed(socket: SyncSocket, timeoutMs = 10_000) {
  const changes: Extract<ServerMessage, { type: 'changes' }>['changes'] = [];
  for (;;) {
    const m = await socket.next('changes', undefined, timeoutMs);
    changes.push(...m.changes);
    if (m.checkpoint) {
      const synced = await socket.next('synced', undefined, timeoutMs);
      return { changes, checkpoint: m.checkpoint, synced };
    }
  }
}
