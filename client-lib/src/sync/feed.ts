/**
 * The change feed as the device receives it: `reset` and `changes` staged until a checkpoint
 * closes the unit, `synced` stored with the cursor — and when the outbox's acknowledged
 * entries may stop being shown optimistically, because the feed has brought the server's rows.
 *
 * An entry gives way after a feed run that began after its commit: on protocol 2 the `synced`
 * whose `acked_through` covers it; failing that, the second `synced` after a fresh ack (one
 * may already be under way when the ack arrives), or the first of a socket for an entry acked
 * before its `hello` (a duplicate, an HTTP ack, one acked on an earlier socket).
 */
import type { ServerMessage } from '@fieldchart/schema/sync';
import { applyWindow, clearStaging, commitUnit, stageChanges, stageReset } from '../storage/feed-store.ts';
import type { LocalDb } from '../storage/local-db.ts';
import { pendingCount, reconcileOnWelcome, settleAcked, settlingCount } from '../storage/outbox.ts';
import type { Emitter } from './emitter.ts';
import type { SyncEvents } from './events.ts';
import type { StatusStore } from './status.ts';

type Welcome = Extract<ServerMessage, { type: 'welcome' }>;
export type FeedMessage = Extract<ServerMessage, { type: 'reset' | 'changes' | 'synced' }>;

export class FeedReceiver {
  private syncedCount = 0;
  /** `syncedCount` when this socket was welcomed. */
  private syncedAtWelcome = 0;
  /** The socket's `synced` says through which mutation the feed has the rows (protocol 2). */
  private ackedThrough = false;
  /**
   * The highest `acked_through` this socket has brought: an answer that arrives after it (an
   * HTTP request still in flight when the socket was welcomed) settles against it at once if
   * it covers it; if the request committed after that run, the server's poke of it starts a
   * run whose `synced` does (docs/sync-protocol.md, Versioning).
   */
  private socketAckedThrough: number | null = null;

  constructor(private readonly deps: { readonly db: LocalDb; readonly status: StatusStore; readonly events: Emitter<SyncEvents> }) {}

  /** A new socket: the window, the outbox reconciled with the server's counter, no half unit. */
  async welcomed(m: Welcome): Promise<void> {
    const db = this.deps.db;
    await applyWindow(db, m.window);
    await reconcileOnWelcome(db, m.last_mutation_id, this.syncedCount);
    this.syncedAtWelcome = this.syncedCount;
    await clearStaging(db);
    this.ackedThrough = m.protocol >= 2;
    this.socketAckedThrough = null;
  }

  /** A half-received unit is resent from the stored cursor on the next socket. */
  disconnected(): Promise<void> {
    this.socketAckedThrough = null;
    return clearStaging(this.deps.db);
  }

  async receive(m: FeedMessage): Promise<void> {
    const { db, status, events } = this.deps;
    switch (m.type) {
      case 'reset':
        await stageReset(db);
        return status.patch({ downloading: true, current: false });
      case 'changes':
        status.patch({ downloading: true, current: false });
        if (m.checkpoint === null) return stageChanges(db, m.changes);
        await commitUnit(db, m.changes, m.checkpoint, null);
        return events.emit('change', { reason: 'feed' });
      case 'synced': {
        await commitUnit(db, [], m.cursor, m.server_time);
        this.syncedCount++;
        if (m.acked_through === undefined) this.ackedThrough = false;
        else this.socketAckedThrough = Math.max(this.socketAckedThrough ?? 0, m.acked_through);
        const settled = await settleAcked(db, this.syncedCount, m.acked_through ?? null);
        status.patch({ downloading: false, current: true, lastSyncedAt: m.server_time, pending: await pendingCount(db) });
        return events.emit('change', { reason: settled > 0 ? 'ack' : 'feed' });
      }
    }
  }

  /** For an ack on the current socket: the `synced` count after which its entry settles. */
  settleAfter(duplicate: boolean): number {
    return duplicate ? this.syncedAtWelcome + 1 : this.syncedCount + 2;
  }

  /**
   * After an answer: entries whose `synced` has already come settle now. `sameClientId`: the
   * install still has the client id the socket said hello with (a re-keyed outbox numbers its
   * entries afresh, so the socket's `acked_through` says nothing of them).
   */
  async settleAnswered(sameClientId: boolean): Promise<void> {
    const through = sameClientId ? this.socketAckedThrough : null;
    if (await settleAcked(this.deps.db, this.syncedCount, through)) this.deps.events.emit('change', { reason: 'ack' });
  }

  /**
   * Whether every acknowledged entry's rows have come. Without `acked_through` (protocol 1) an
   * entry may wait for a feed run a quiet server never makes: then the device counts as synced
   * once everything is acknowledged, as it always did.
   */
  async caughtUp(): Promise<boolean> {
    return !this.ackedThrough || (await settlingCount(this.deps.db)) === 0;
  }
}
