/**
 * The engine's socket and the attempts to open it: one at a time, unless it has not opened
 * within the backoff's ceiling and a spare opens beside it (spare-socket.ts); the first of the
 * two to open says `hello` with the device's client id and cursor, and the other is closed
 * unheard. The engine decides when to connect and what a close means; this holds which socket
 * is the engine's.
 */
import { CLOSE_CODES, PROTOCOL_VERSION, type ServerMessage } from '@fieldchart/schema/sync';
import type { WebSocketConstructor } from '../platform/websocket.ts';
import type { LocalDb } from '../storage/local-db.ts';
import { clientIdOf, getMeta } from '../storage/meta.ts';
import { Connection } from './connection.ts';
import type { Reconnect } from './reconnect.ts';
import { SpareSocket } from './spare-socket.ts';

export interface SocketsDeps {
  readonly db: LocalDb;
  readonly url: string;
  readonly WebSocket: WebSocketConstructor;
  readonly reconnect: Reconnect;
  /** The token to say hello with (null: none); throws when none can be had now. */
  tokenForHello(): Promise<string | null>;
  /** Syncing runs on this tab: a socket is wanted. */
  wanted(): boolean;
  /** No token could be had: try again with the backoff. */
  retryLater(): void;
  /** A socket opened first and says hello now. */
  opened(): void;
  message(conn: Connection, m: ServerMessage): void;
  invalid(conn: Connection, reason: string): void;
  closed(conn: Connection, code: number, reason: string): void;
  onError(err: unknown): void;
}

export class Sockets {
  /** The engine's socket, open or opening. */
  current: Connection | null = null;
  /** The client id the current socket said hello with. */
  helloClientId: string | null = null;
  /**
   * The protocol version hello says: this library's, until a server refuses it (4426) and
   * names only older ones (after-close.ts); then the highest both speak, for this engine's life.
   */
  protocol: number = PROTOCOL_VERSION;
  private connecting = false;
  private readonly spare: SpareSocket;

  constructor(private readonly deps: SocketsDeps) {
    this.spare = new SpareSocket({
      overlapAfterMs: () => deps.reconnect.overlapAfterMs,
      firstHandshakeMs: () => deps.reconnect.firstHandshakeMs,
      dial: async (handshakeMs, wanted) => {
        const token = await deps.tokenForHello().catch(() => null);
        return token ? this.dial(token, handshakeMs, wanted) : null;
      },
      stuck: (primary) => deps.wanted() && this.current === primary && !primary.isOpen,
      onError: (err) => deps.onError(err),
    });
  }

  /** A socket exists or is being made. */
  get busy(): boolean {
    return this.current !== null || this.connecting;
  }

  /** Opens the engine's socket, unless there is one. */
  async connect(): Promise<void> {
    if (this.busy) return;
    this.connecting = true;
    try {
      this.deps.reconnect.cancel();
      let token: string | null;
      try {
        token = await this.deps.tokenForHello();
      } catch {
        return this.deps.retryLater();
      }
      if (!this.deps.wanted() || this.current || !token) return;
      const handshakeMs = this.deps.reconnect.handshakeMs;
      const conn = await this.dial(token, handshakeMs, () => this.deps.wanted() && !this.current);
      if (!conn) return;
      this.current = conn;
      this.spare.arm(conn, handshakeMs);
    } finally {
      this.connecting = false;
    }
  }

  /** Closes the socket (and a spare) from this side; its close is heard as any other. */
  close(code: number, reason: string): void {
    this.spare.drop();
    this.current?.close(code, reason);
  }

  /** Lets go of the socket now: closed, and its close no longer the engine's concern. */
  forget(): void {
    this.spare.drop();
    const conn = this.current;
    this.current = null;
    conn?.close(CLOSE_CODES.normal, 'bye');
  }

  /**
   * `conn` closed: true if it was the engine's socket (which it no longer is). A spare's close
   * is handled here: another follows after the ceiling while the socket is still stuck.
   */
  ended(conn: Connection): boolean {
    if (this.spare.is(conn)) {
      this.spare.ended(this.current);
      return false;
    }
    if (this.current !== conn) return false;
    this.current = null;
    return true;
  }

  /**
   * After the engine's socket ended: with `retry`, a spare still opening takes its place (true);
   * otherwise, or with none, no spare is left.
   */
  handOver(retry: boolean): boolean {
    const spare = retry ? this.spare.take() : null;
    this.spare.drop();
    if (!spare) return false;
    this.current = spare;
    this.spare.arm(spare, this.deps.reconnect.firstHandshakeMs);
    return true;
  }

  /** A socket that says hello with `token` once it opens; null if `wanted` no longer holds by then. */
  private async dial(token: string, handshakeMs: number, wanted: () => boolean): Promise<Connection | null> {
    const { db, url, WebSocket } = this.deps;
    const clientId = await clientIdOf(db);
    const cursor = await getMeta(db, 'cursor');
    if (!wanted()) return null;
    const conn: Connection = new Connection(
      WebSocket,
      url,
      {
        onOpen: () => {
          // One hello per attempt: of two sockets opening, the first to open is the one.
          if (!this.openedFirst(conn)) return conn.close(CLOSE_CODES.normal, 'another socket opened first');
          this.deps.opened();
          this.helloClientId = clientId;
          conn.send({ type: 'hello', protocol: this.protocol, token, client_id: clientId, cursor });
        },
        onMessage: (m) => this.deps.message(conn, m),
        onInvalid: (reason) => this.deps.invalid(conn, reason),
        onClose: (code, reason) => this.deps.closed(conn, code, reason),
      },
      handshakeMs,
    );
    return conn;
  }

  /** `conn` opened: true if it is the attempt to go on with (the other one is closed, unheard). */
  private openedFirst(conn: Connection): boolean {
    if (conn === this.current) {
      this.spare.drop();
      return true;
    }
    if (!this.spare.is(conn) || this.current?.isOpen) return false;
    // The spare got through first: it is the socket from now on.
    const stuck = this.current;
    this.current = this.spare.take();
    stuck?.close(CLOSE_CODES.normal, 'another socket opened first');
    return true;
  }
}
