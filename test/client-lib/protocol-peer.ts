/**
 * A stand-in sync server for the offline client's unit tests: a real websocket server on a
 * loopback port that speaks docs/sync-protocol.md (validated with the contract's schemas)
 * from an in-memory row store, with hooks to hold, reject or retry mutations and to cut
 * connections. End-to-end behaviour is tested against the real server (offline-e2e.test.ts).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import * as Y from 'yjs';
import * as syncProtocol from 'y-protocols/sync';
import * as encoding from 'lib0/encoding';
import * as decoding from 'lib0/decoding';
import { MUTATIONS_FRAMES_FROM, clientMessage, serverMessage, type Change, type ClientMessage, type ServerMessage } from '@fieldchart/schema/sync';

type MutationMsg = Extract<ClientMessage, { type: 'mutation' }>;
type Answer = Extract<ServerMessage, { type: 'ack' | 'reject' | 'retry' }>;
/** A change as a test writes it; the peer stamps the version. */
export type NewChange = Change extends infer C ? (C extends Change ? Omit<C, 'version'> : never) : never;
export type MutationVerdict = { ack: unknown } | { reject: { status: number; code: string; message: string } } | { retry: number } | 'hold';

export interface PeerSocket {
  readonly ws: WebSocket;
  readonly hello: Extract<ClientMessage, { type: 'hello' }>;
  readonly received: ClientMessage[];
  send(m: ServerMessage): void;
}

export class ProtocolPeer {
  readonly server: http.Server;
  readonly wss: WebSocketServer;
  url = '';
  readonly sockets: PeerSocket[] = [];
  readonly hellos: Extract<ClientMessage, { type: 'hello' }>[] = [];
  /** Every mutation frame received, in order (duplicates included). */
  readonly frames: MutationMsg[] = [];
  /** Mutations applied (each id once), per client. */
  readonly applied: MutationMsg[] = [];
  readonly lastMutationId = new Map<string, number>();
  /** Refusals by `<client id>:<mutation id>`, answered again on a replay. */
  private readonly refused = new Map<string, Extract<MutationVerdict, { reject: unknown }>['reject']>();
  readonly upgradeUrls: string[] = [];
  readonly refreshCalls: string[] = [];
  readonly authTokens: string[] = [];
  readonly docs = new Map<string, Y.Doc>();
  /** Rows by `table/id`, with the version that last wrote them. */
  private readonly rows = new Map<string, Change>();
  private version = 0;
  window = { from: '2000-01-01', to: '2100-01-01' };
  /** `welcome.max_in_flight`, sent (with protocol 3) when set. */
  maxInFlight: number | null = null;
  /**
   * The protocol the peer welcomes with when set (at most the hello's; its `max_in_flight` is
   * then `maxInFlight` or 100): 5 takes `mutations` frames. Unset: 3 with `maxInFlight`, else 1.
   */
  speaks: number | null = null;
  /** The size of each `mutations` frame received, in order. */
  readonly mutationsFrames: number[] = [];
  tokenExpiresAt = () => new Date(Date.now() + 3600_000).toISOString();
  userId = '0b7e7f2e-5a49-4c0e-9a51-2f6f0d1f6a11';
  /** Decides each new mutation; default: acknowledge. */
  onMutation: (m: MutationMsg, socket: PeerSocket) => MutationVerdict = () => ({ ack: null });
  /** Called on hello before welcome; return a close code (and reason) to refuse, or 'ignore' to never answer. */
  onHello: (hello: Extract<ClientMessage, { type: 'hello' }>) => number | { code: number; reason: string } | null | 'ignore' = () => null;
  /** Batches of the feed sent per unit (checkpoint only on the last). */
  batchSize = 500;
  held: { m: MutationMsg; socket: PeerSocket }[] = [];
  private readonly retrying = new Map<PeerSocket, number>();

  constructor() {
    this.server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        if (req.url === '/api/therapist/v1/token/refresh' && req.method === 'POST') {
          const rt = (JSON.parse(body) as { refresh_token: string }).refresh_token;
          this.refreshCalls.push(rt);
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ status: true, data: { token: `token-${this.refreshCalls.length}`, refresh_token: `refresh-${this.refreshCalls.length}`, expires_in: 3600 } }));
          return;
        }
        if (req.url === '/api/therapist/v1/logout') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ status: true, message: 'bye' }));
          return;
        }
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: false, code: 'not_found', message: 'Not found' }));
      });
    });
    this.wss = new WebSocketServer({ server: this.server, path: '/api/therapist/v1/sync' });
    this.wss.on('connection', (ws, req) => this.accept(ws, req.url ?? ''));
  }

  static async start(): Promise<ProtocolPeer> {
    const peer = new ProtocolPeer();
    await new Promise<void>((r) => peer.server.listen(0, '127.0.0.1', r));
    peer.url = `http://127.0.0.1:${(peer.server.address() as AddressInfo).port}`;
    return peer;
  }

  /** Writes rows on the "server": stored, then sent live to every open socket as one unit. */
  publish(changes: NewChange[]): void {
    const stamped = changes.map((c) => ({ ...c, version: ++this.version }) as Change);
    for (const c of stamped) this.rows.set(`${c.table}/${c.id}`, c);
    for (const s of this.open()) this.sendFeed(s, stamped);
  }

  /** Sends a unit's batches but cuts the socket before the one with the checkpoint. */
  publishAndCutBeforeCheckpoint(changes: NewChange[]): void {
    const stamped = changes.map((c) => ({ ...c, version: ++this.version }) as Change);
    for (const c of stamped) this.rows.set(`${c.table}/${c.id}`, c);
    for (const s of this.open()) {
      s.send({ type: 'changes', changes: stamped, checkpoint: null, more: true });
      s.ws.terminate();
    }
  }

  open(): PeerSocket[] {
    return this.sockets.filter((s) => s.ws.readyState === s.ws.OPEN);
  }

  closeAll(code = 1001): void {
    for (const s of this.open()) s.ws.close(code, 'test');
  }

  /**
   * Answers every held mutation with `verdict`: one frame each, or (`gathered`, protocol 4)
   * one `answers` frame per socket.
   */
  release(verdict: (m: MutationMsg) => Exclude<MutationVerdict, 'hold'> = () => ({ ack: null }), gathered = false): void {
    const held = this.held;
    this.held = [];
    if (!gathered) {
      for (const h of held) this.answer(h.socket, h.m, verdict(h.m));
      return;
    }
    const bySocket = new Map<PeerSocket, Answer[]>();
    for (const h of held) {
      const answers = bySocket.get(h.socket) ?? [];
      bySocket.set(h.socket, answers);
      answers.push(this.answerOf(h.socket, h.m, verdict(h.m)));
    }
    for (const [s, answers] of bySocket) if (answers.length > 0) s.send({ type: 'answers', answers });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.ws.terminate();
    await new Promise<void>((r) => this.wss.close(() => r()));
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private accept(ws: WebSocket, url: string): void {
    this.upgradeUrls.push(url);
    let socket: PeerSocket | null = null;
    const received: ClientMessage[] = [];
    ws.on('message', (data) => {
      const parsed = clientMessage.safeParse(JSON.parse(String(data)));
      if (!parsed.success) return ws.close(4400, 'bad message');
      const m = parsed.data;
      received.push(m);
      if (!socket) {
        if (m.type !== 'hello') return ws.close(4400, 'hello first');
        this.hellos.push(m);
        const refuse = this.onHello(m);
        if (refuse === 'ignore') return;
        if (typeof refuse === 'number') return ws.close(refuse, 'refused');
        if (refuse !== null) return ws.close(refuse.code, refuse.reason);
        socket = {
          ws,
          hello: m,
          received,
          send: (out) => {
            serverMessage.parse(out); // the peer itself speaks the contract
            if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(out));
          },
        };
        this.sockets.push(socket);
        const protocol = this.welcomedProtocol(m);
        socket.send({
          type: 'welcome',
          protocol,
          user_id: this.userId,
          server_time: new Date().toISOString(),
          last_mutation_id: this.lastMutationId.get(m.client_id) ?? 0,
          token_expires_at: this.tokenExpiresAt(),
          window: this.window,
          ...(protocol >= 3 ? { max_in_flight: this.maxInFlight ?? 100 } : {}),
        });
        const since = m.cursor ? Number(m.cursor.split('.')[1]) : null;
        if (since === null) socket.send({ type: 'reset', reason: 'first_sync' });
        this.sendFeed(socket, [...this.rows.values()].filter((c) => since === null || c.version > since).sort((a, b) => a.version - b.version));
        return;
      }
      this.handle(socket, m);
    });
  }

  private sendFeed(s: PeerSocket, changes: Change[]): void {
    const cursor = `v1.${this.version}`;
    for (let i = 0; i < changes.length || i === 0; i += this.batchSize) {
      const batch = changes.slice(i, i + this.batchSize);
      const last = i + this.batchSize >= changes.length;
      s.send({ type: 'changes', changes: batch, checkpoint: last ? cursor : null, more: !last });
    }
    s.send({ type: 'synced', cursor, server_time: new Date().toISOString() });
  }

  /** The protocol a socket that said `hello` is welcomed with (`speaks`). */
  private welcomedProtocol(hello: Extract<ClientMessage, { type: 'hello' }>): number {
    return this.speaks !== null ? Math.min(hello.protocol, this.speaks) : this.maxInFlight === null ? 1 : 3;
  }

  private handle(s: PeerSocket, m: ClientMessage): void {
    switch (m.type) {
      case 'mutations': {
        if (this.welcomedProtocol(s.hello) < MUTATIONS_FRAMES_FROM) return s.ws.close(4400, 'mutations frames need protocol 5');
        this.mutationsFrames.push(m.mutations.length);
        for (const one of m.mutations) this.handle(s, one);
        return;
      }
      case 'mutation': {
        this.frames.push(m);
        const last = this.lastMutationId.get(s.hello.client_id) ?? 0;
        if (m.mutation_id <= last) {
          // As the server does: a refused mutation replayed is refused again.
          const refused = this.refused.get(`${s.hello.client_id}:${m.mutation_id}`);
          if (refused) return s.send({ type: 'reject', mutation_id: m.mutation_id, ...refused });
          return s.send({ type: 'ack', mutation_id: m.mutation_id, result: { duplicate: true } });
        }
        // After a retry, nothing behind the retried id may be processed before it comes again:
        // it would move last_mutation_id past it, and the resent mutation would be taken for a
        // duplicate and never applied.
        const blocked = this.retrying.get(s);
        if (blocked !== undefined) {
          if (m.mutation_id !== blocked) return s.send({ type: 'retry', mutation_id: m.mutation_id, after_ms: 0 });
          this.retrying.delete(s);
        }
        const verdict = this.onMutation(m, s);
        if (verdict === 'hold') this.held.push({ m, socket: s });
        else this.answer(s, m, verdict);
        return;
      }
      case 'doc_open': {
        const doc = this.docs.get(m.doc) ?? new Y.Doc();
        this.docs.set(m.doc, doc);
        const enc = encoding.createEncoder();
        syncProtocol.writeSyncStep1(enc, doc);
        s.send({ type: 'doc', doc: m.doc, message: Buffer.from(encoding.toUint8Array(enc)).toString('base64') });
        return;
      }
      case 'doc': {
        const doc = this.docs.get(m.doc);
        if (!doc) return;
        const reply = encoding.createEncoder();
        syncProtocol.readSyncMessage(decoding.createDecoder(Buffer.from(m.message, 'base64')), reply, doc, 'peer');
        if (encoding.length(reply) > 0) s.send({ type: 'doc', doc: m.doc, message: Buffer.from(encoding.toUint8Array(reply)).toString('base64') });
        return;
      }
      case 'auth':
        this.authTokens.push(m.token);
        s.send({ type: 'auth_ok', token_expires_at: new Date(Date.now() + 3600_000).toISOString() });
        return;
      default:
        return;
    }
  }

  private answer(s: PeerSocket, m: MutationMsg, verdict: Exclude<MutationVerdict, 'hold'>): void {
    s.send(this.answerOf(s, m, verdict));
  }

  /** The answer to `m`, its effects on the peer's state made. */
  private answerOf(s: PeerSocket, m: MutationMsg, verdict: Exclude<MutationVerdict, 'hold'>): Answer {
    if ('retry' in verdict) {
      this.retrying.set(s, m.mutation_id);
      return { type: 'retry', mutation_id: m.mutation_id, after_ms: verdict.retry };
    }
    this.lastMutationId.set(s.hello.client_id, Math.max(this.lastMutationId.get(s.hello.client_id) ?? 0, m.mutation_id));
    if ('reject' in verdict) {
      this.refused.set(`${s.hello.client_id}:${m.mutation_id}`, verdict.reject);
      return { type: 'reject', mutation_id: m.mutation_id, ...verdict.reject };
    }
    this.applied.push(m);
    return { type: 'ack', mutation_id: m.mutation_id, result: verdict.ack };
  }
}

// Rows shaped as the feed contract's (schema/src/sync/rows.ts).
const T0 = '2026-11-01T10:00:00.000Z';
export const EMPTY_EVV = {
  travel_started_at: null,
  arrived_at: null,
  arrival_location: null,
  documentation_started_at: null,
  departed_at: null,
  departure_location: null,
  drive_minutes: null,
  onsite_minutes: null,
  documentation_minutes: null,
};

export function patientRow(uuid: string, over: Record<string, unknown> = {}) {
  return { uuid, first_name: 'Marguerite', last_name: 'Okafor', email: null, phone: null, address: '1200 W Fullerton Ave', created_at: T0, updated_at: T0, ...over };
}

export function visitRow(uuid: string, patientUuid: string | null, visitDate: string, over: Record<string, unknown> = {}) {
  return {
    uuid,
    patient_uuid: patientUuid,
    referral_uuid: null,
    visit_date: visitDate,
    start_time: '09:00',
    duration_minutes: 45,
    status: 'scheduled',
    visit_type: 'routine',
    address: '1200 W Fullerton Ave',
    notes: null,
    ai_assisted: false,
    completed_at: null,
    created_at: T0,
    updated_at: T0,
    evv: EMPTY_EVV,
    ...over,
  };
}
