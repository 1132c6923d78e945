/**
 * One socket to the sync endpoint: JSON text frames in and out, every incoming frame checked
 * against the contract, and a deadline for the handshake. Knows nothing of the protocol's
 * meaning (sync-engine.ts) nor of reconnecting (the engine makes a new Connection each time).
 */
import { serverMessage, type ClientMessage, type ServerMessage } from '@fieldchart/schema/sync';
import { OPEN, type WebSocketConstructor, type WebSocketLike } from '../platform/websocket.ts';

export interface ConnectionHandlers {
  onOpen(): void;
  onMessage(message: ServerMessage): void;
  /** A frame that is not a contract message: the engine drops the socket and resumes. */
  onInvalid(reason: string): void;
  /** Called once, however the socket ended (1006 when it never opened or dropped). */
  onClose(code: number, reason: string): void;
}

/**
 * How long a new socket may take to be welcomed (TCP, upgrade, `hello` → `welcome`) at first.
 * A connect that the network swallows (a SYN lost on a moving phone) is otherwise retried by
 * TCP for about a minute before it fails, and the outbox waits that long; a server that says
 * nothing after `hello` would hold the device for ever.
 */
export const OPEN_TIMEOUT_MS = 10_000;
/**
 * The longest handshake deadline. After each handshake that ran out, the next one is given
 * twice as long (handshakeDeadline): a server slowed by load (a restart's recovery, a busy
 * embedded database) that needs more than OPEN_TIMEOUT_MS to answer would otherwise see every
 * attempt abandoned just before it succeeds, and the device would never reach it.
 */
export const MAX_HANDSHAKE_MS = 120_000;

/** The handshake deadline after `timedOut` handshakes in a row ran out. */
export function handshakeDeadline(timedOut: number, firstMs = OPEN_TIMEOUT_MS): number {
  return Math.min(MAX_HANDSHAKE_MS, firstMs * 2 ** Math.min(timedOut, 10));
}

/** The close reason of a handshake that ran out of time. */
export const HANDSHAKE_TIMEOUT = 'connect timeout';

export class Connection {
  private readonly socket: WebSocketLike;
  private ended = false;
  private handshakeTimer: ReturnType<typeof setTimeout> | null;

  /** `handshakeMs`: how long until `welcomed()` must have been called, else the socket is dropped (1006). */
  constructor(WebSocketImpl: WebSocketConstructor, url: string, private readonly handlers: ConnectionHandlers, handshakeMs = OPEN_TIMEOUT_MS) {
    this.socket = new WebSocketImpl(url);
    this.handshakeTimer = setTimeout(() => {
      try {
        this.socket.close(); // aborts an opening handshake (no code: 1006 may not be sent)
      } catch {
        // already closing
      }
      this.end(1006, HANDSHAKE_TIMEOUT);
    }, handshakeMs);
    this.socket.onopen = () => {
      if (!this.ended) this.handlers.onOpen();
    };
    this.socket.onmessage = (event) => {
      if (this.ended) return;
      const text = typeof event.data === 'string' ? event.data : null;
      if (text === null) return this.handlers.onInvalid('binary frame');
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        return this.handlers.onInvalid('frame is not JSON');
      }
      const parsed = serverMessage.safeParse(json);
      if (!parsed.success) {
        const type = typeof json === 'object' && json !== null && 'type' in json ? String((json as { type: unknown }).type) : '?';
        const where = parsed.error.issues.map((i) => i.path.join('.') || '(message)').slice(0, 5).join(', ');
        return this.handlers.onInvalid(`'${type}' message does not match the contract (${where})`);
      }
      this.handlers.onMessage(parsed.data);
    };
    this.socket.onclose = (event) => this.end(event.code, event.reason);
    // An error is always followed by close; the close carries what the engine needs.
    this.socket.onerror = () => {};
  }

  /** The server said `welcome`: the handshake is over. */
  welcomed(): void {
    if (this.handshakeTimer) clearTimeout(this.handshakeTimer);
    this.handshakeTimer = null;
  }

  get isOpen(): boolean {
    return !this.ended && this.socket.readyState === OPEN;
  }

  /** Sends a message; false if the socket is not open (the caller resends after reconnecting). */
  send(message: ClientMessage): boolean {
    return this.sendText(JSON.stringify(message));
  }

  /** Sends a message already serialised (a `ClientMessage`'s JSON), as `send` does. */
  sendText(text: string): boolean {
    if (!this.isOpen) return false;
    try {
      this.socket.send(text);
      return true;
    } catch {
      return false;
    }
  }

  /** Closes from this side; `onClose` follows at once with `code`. */
  close(code = 1000, reason = ''): void {
    try {
      this.socket.close(code, reason);
    } catch {
      // already closing
    }
    this.end(code, reason);
  }

  private end(code: number, reason: string): void {
    if (this.ended) return;
    this.ended = true;
    if (this.handshakeTimer) clearTimeout(this.handshakeTimer);
    this.socket.onopen = null;
    this.socket.onmessage = null;
    this.socket.onclose = null;
    this.handlers.onClose(code, reason);
  }
}
