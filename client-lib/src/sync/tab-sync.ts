/**
 * The engine's side of the tab link (tab-link.ts): what a leader repeats to its followers and
 * answers them, and what a follower asks of its leader instead of doing it itself. Which tab
 * leads is the link's; what leading means (the socket) stays the engine's.
 */
import type { LocalDb } from '../storage/local-db.ts';
import type { DraftSync } from './drafts.ts';
import type { Emitter } from './emitter.ts';
import type { SyncEvents } from './events.ts';
import type { StatusStore } from './status.ts';
import { FORWARDED_EVENTS, type TabLink, type TabMessage } from './tab-link.ts';
import type { Waiter } from './waiters.ts';

/** The engine as the tabs see it. */
export interface TabSyncHost {
  readonly db: LocalDb;
  readonly state: StatusStore;
  readonly events: Emitter<SyncEvents>;
  readonly drafts: DraftSync;
  /** Leader: a follower queued a write; its `whenSynced`; its reconnect; it signed in or out. */
  written(): Promise<void>;
  whenSynced(): Promise<void>;
  dropConnection(): void;
  reloadSession(): Promise<void>;
  /** Runs `fn` in the engine's order, after the messages before it; a failure becomes state. */
  enqueue(fn: () => Promise<void>): void;
}

/** What a follower's notice to the leader can be. */
type ToLeader = Extract<TabMessage, { type: 'written' | 'session' | 'reconnect' }>;

export class TabSync {
  /** A follower's `whenSynced` calls, answered by the leader, by id. */
  private readonly waiting = new Map<string, Waiter>();

  constructor(
    private readonly link: TabLink,
    private readonly host: TabSyncHost,
  ) {
    link.onMessage((m) => this.receive(m));
    host.events.on('status', (status) => {
      if (link.leading) link.post({ type: 'status', status });
    });
    for (const event of FORWARDED_EVENTS) {
      host.events.on(event, (payload) => {
        if (link.leading) link.post({ type: 'event', event, payload } as TabMessage);
      });
    }
  }

  get leading(): boolean {
    return this.link.leading;
  }

  /**
   * Leads now if no tab does (true), or follows (false) and calls `onLaterLead` once this tab
   * takes over. Either way the other tabs hear of it.
   */
  async lead(onLaterLead: () => void): Promise<boolean> {
    const now = await this.link.lead(onLaterLead);
    this.link.post(now ? { type: 'leader' } : { type: 'hello' });
    return now;
  }

  /** A new leader: its followers re-ask what they waited for, and see its status. */
  announce(): void {
    this.link.post({ type: 'leader' });
    this.link.post({ type: 'status', status: this.host.state.value });
  }

  /** A follower's notice; a leader does it itself. */
  tellLeader(m: ToLeader): void {
    if (!this.link.leading) this.link.post(m);
  }

  /** Any tab's notice to all the others: a draft update stored, the device key replaced. */
  post(m: Extract<TabMessage, { type: 'draft' | 'reset' }>): void {
    this.link.post(m);
  }

  /** A follower's `whenSynced`: the leader's answer. */
  whenSynced(): Promise<void> {
    const id = globalThis.crypto.randomUUID();
    const wait = new Promise<void>((resolve, reject) => this.waiting.set(id, { resolve, reject }));
    this.link.post({ type: 'when_synced', id });
    return wait;
  }

  /** This tab leads now: what it waited for is its own engine's to answer. */
  takeWaiters(): Waiter[] {
    const ws = [...this.waiting.values()];
    this.waiting.clear();
    return ws;
  }

  close(err: Error): void {
    for (const w of this.takeWaiters()) w.reject(err);
    // Another tab leads from here.
    this.link.close();
  }

  private receive(m: TabMessage): void {
    // A follower's copy of the leader's status is a plain replacement: no queue needed.
    if (m.type === 'status') {
      if (!this.link.leading) this.host.state.patch(m.status);
      return;
    }
    this.host.enqueue(() => this.handle(m));
  }

  private async handle(m: TabMessage): Promise<void> {
    const host = this.host;
    if (m.type === 'draft') return host.drafts.fromTab(m.doc, m.update);
    if (m.type === 'reset') {
      // Sealing with the old key now would write rows nobody can read.
      await host.db.reloadKey();
      host.drafts.clear();
      return host.events.emit('change', { reason: 'reset' });
    }
    if (this.link.leading) {
      switch (m.type) {
        case 'hello':
          return this.link.post({ type: 'status', status: host.state.value });
        case 'written':
          return host.written();
        case 'session':
          return host.reloadSession();
        case 'reconnect':
          return host.dropConnection();
        case 'when_synced':
          host.whenSynced().then(
            () => this.link.post({ type: 'synced', id: m.id, error: null }),
            (err: unknown) => this.link.post({ type: 'synced', id: m.id, error: err instanceof Error ? err.message : String(err) }),
          );
          return;
        default:
          return;
      }
    }
    switch (m.type) {
      case 'event':
        return host.events.emit(m.event, m.payload as never);
      case 'synced': {
        const w = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        if (m.error === null) w?.resolve();
        else w?.reject(new Error(m.error));
        return;
      }
      case 'leader':
        // The new leader knows nothing of what the last one was asked.
        for (const id of this.waiting.keys()) this.link.post({ type: 'when_synced', id });
        return this.link.post({ type: 'hello' });
      default:
        return;
    }
  }
}
