/**
 * A clinician's device under faults: one sync socket (SyncPeer) that comes back by itself when
 * the server goes away — reconnecting with backoff and jitter and saying hello with the last
 * cursor it was given, as the client library does — and remembers what the feed told it: the
 * timer events and the AI status of its dictations. "Reconciled" is then a question with an
 * answer: has it seen every acknowledged timer event and every dictation completed?
 */
import { randomUUID } from 'node:crypto';
import type { Message } from './sync-peer.ts';
import { SyncPeer } from './sync-peer.ts';

export class LoadDevice {
  /** `visit/type/epoch ms` of every timer event row the feed delivered. */
  readonly timers = new Set<string>();
  /** AI status by transcription id, as last delivered. */
  readonly aiStatus = new Map<string, string>();
  connects = 0;
  /** performance.now() of the last `synced` (a feed run caught up). */
  syncedAt = Number.NaN;
  connected = false;
  /** Called with each `changes` message (the bench times deliveries with it). */
  onChanges: ((m: Extract<Message, { type: 'changes' }>) => void) | null = null;
  private cursor: string | null = null;
  private peer: SyncPeer | null = null;
  private stopped = false;
  private readonly loop: Promise<void>;

  constructor(
    private readonly url: string,
    private readonly token: () => string,
    /** One install: the same client id on every connection. */
    readonly clientId = randomUUID(),
  ) {
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        const peer = await SyncPeer.connect(this.url);
        if (this.stopped) {
          peer.close();
          break;
        }
        this.peer = peer;
        this.connects++;
        const closed = new Promise<void>((resolve) => peer.ws.once('close', () => resolve()));
        peer.on((m) => this.receive(m));
        await peer.hello(this.token(), this.cursor, this.clientId);
        this.connected = true;
        failures = 0;
        await closed;
      } catch {
        // refused while the server is down, or closed before the welcome: try again
      }
      this.connected = false;
      this.peer = null;
      if (this.stopped) break;
      failures++;
      const backoff = Math.min(5000, 250 * 2 ** Math.min(failures, 5));
      await new Promise((r) => setTimeout(r, backoff * (0.5 + Math.random() / 2)));
    }
  }

  private receive(m: Message): boolean {
    if (m.type === 'changes') {
      for (const ch of m.changes) {
        if (ch.op !== 'upsert') continue;
        const row = ch.row as Record<string, unknown>;
        if (ch.table === 'timer_events') this.timers.add(`${String(row.schedule_uuid)}/${String(row.event_type)}/${Date.parse(String(row.event_time))}`);
        if (ch.table === 'ai_status') this.aiStatus.set(String(row.transcription_uuid), String(row.status));
      }
      this.onChanges?.(m);
    } else if (m.type === 'synced') {
      this.cursor = m.cursor;
      this.syncedAt = performance.now();
    }
    return false;
  }

  /** What of `expected` this device has not been shown yet. */
  missing(expected: { timers: Iterable<string>; completed: Iterable<string> }): string[] {
    const out: string[] = [];
    for (const t of expected.timers) if (!this.timers.has(t)) out.push(`timer ${t}`);
    for (const id of expected.completed) if (this.aiStatus.get(id) !== 'completed') out.push(`dictation ${id} ${this.aiStatus.get(id) ?? 'unseen'}`);
    return out;
  }

  async close(): Promise<void> {
    this.stopped = true;
    this.peer?.close();
    await this.loop;
  }
}

export const timerKey = (visit: string, type: string, time: string) => `${visit}/${type}/${Date.parse(time)}`;
