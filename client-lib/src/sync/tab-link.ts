/**
 * The tabs of one app on one device database share one sync connection: the tab holding the
 * app's `navigator.locks` lock leads (it opens the socket, uploads, applies the feed), the
 * others follow over a BroadcastChannel. The lock is held for the tab's life; the browser
 * frees it when the tab closes or reloads, and the next tab waiting for it leads.
 * Writes are already in the shared outbox (shared-db.ts) when a follower says `written`; a
 * draft update is stored before it is relayed, so a tab that misses one reads it from the database.
 */
import type { SyncEvents } from './events.ts';
import type { SyncStatus } from './status.ts';

/** The events a leader repeats to its followers (its `status` travels as `status`). */
export const FORWARDED_EVENTS = ['change', 'rejection', 'failure', 'ack'] as const;
type ForwardedEvent = (typeof FORWARDED_EVENTS)[number];

export type TabMessage =
  /** A tab began to lead: followers re-ask what they were waiting for. */
  | { readonly type: 'leader' }
  /** A follower opened: the leader answers with its status. */
  | { readonly type: 'hello' }
  | { readonly type: 'status'; readonly status: SyncStatus }
  | { readonly [K in ForwardedEvent]: { readonly type: 'event'; readonly event: K; readonly payload: SyncEvents[K] } }[ForwardedEvent]
  /** A follower queued a write in the shared outbox: the leader uploads it. */
  | { readonly type: 'written' }
  /** A follower signed in or out (the stored session changed): the leader reloads it. */
  | { readonly type: 'session' }
  | { readonly type: 'reconnect' }
  /** A tab deleted the user's data and replaced the device key: every other tab takes the new key. */
  | { readonly type: 'reset' }
  /** A tab stored an update of a draft (leader: also what the server sent): open copies take it. */
  | { readonly type: 'draft'; readonly doc: string; readonly update: Uint8Array }
  | { readonly type: 'when_synced'; readonly id: string }
  | { readonly type: 'synced'; readonly id: string; readonly error: string | null };

export interface TabLink {
  /** This tab holds the lock. */
  readonly leading: boolean;
  /**
   * Takes the lock if it is free (answers true: this tab leads), or else waits for it as long
   * as the tab lives and calls `onLaterLead` once this tab holds it (answers false at once).
   */
  lead(onLaterLead: () => void): Promise<boolean>;
  post(message: TabMessage): void;
  onMessage(listener: (message: TabMessage) => void): void;
  /** Lets the lock go (another tab leads) and leaves the channel. */
  close(): void;
}

/** The browser's tab link; `names` from shared-db.ts `tabNames`. */
export function browserTabLink(names: { readonly sync: string; readonly channel: string }): TabLink {
  const channel = new BroadcastChannel(names.channel);
  const abort = new AbortController();
  let release: (() => void) | null = null;
  let leading = false;
  let closed = false;
  return {
    get leading() {
      return leading;
    },
    async lead(onLaterLead) {
      const hold = () => new Promise<void>((resolve) => (release = resolve));
      let answer: (leadsNow: boolean) => void = () => {};
      const leadsNow = new Promise<boolean>((resolve) => (answer = resolve));
      // Free now: this tab leads from the start, before its engine decides anything else.
      navigator.locks
        .request(names.sync, { ifAvailable: true }, (lock) => {
          if (!lock || closed) return answer(false);
          leading = true;
          answer(true);
          return hold();
        })
        .catch(() => answer(false));
      if (await leadsNow) return true;
      if (closed) return false;
      navigator.locks
        .request(names.sync, { signal: abort.signal }, () => {
          if (closed) return;
          leading = true;
          onLaterLead();
          // Held until close(); the browser frees it with the tab.
          return hold();
        })
        // An aborted wait (closed before leading) is the expected end.
        .catch(() => undefined);
      return false;
    },
    post(message) {
      if (!closed) channel.postMessage(message);
    },
    onMessage(listener) {
      channel.addEventListener('message', (e: MessageEvent<TabMessage>) => listener(e.data));
    },
    close() {
      if (closed) return;
      closed = true;
      leading = false;
      abort.abort();
      release?.();
      channel.close();
    },
  };
}
