/**
 * What the platform knows of its network. Browsers and web views say it with `online` and
 * `offline` events on the global object and `navigator.onLine`; an app elsewhere (React
 * Native's NetInfo, a test) may pass its own.
 *
 * The engine needs it because losing the network does not end an open socket: Chromium going
 * offline leaves it open (measured: it still accepts sends), and TCP gives up only minutes
 * later, while the app shows "connected". And when the network is back, waiting out the
 * reconnect backoff would keep the outbox waiting for nothing.
 */

/** The device's network as the platform reports it. */
export interface NetworkStatus {
  /** False only when the platform is sure there is no network (`navigator.onLine`). */
  readonly online: boolean;
  /** Calls `offline` / `online` as the network goes and comes back; answers the unsubscribe. */
  watch(handlers: { offline(): void; online(): void }): () => void;
}

interface EventGlobal {
  addEventListener(type: string, listener: () => void): void;
  removeEventListener(type: string, listener: () => void): void;
  navigator: { onLine: boolean };
}

/** The browser's network status, or null where the global object reports none (Node). */
export function platformNetwork(): NetworkStatus | null {
  const g = globalThis as Partial<EventGlobal>;
  if (typeof g.addEventListener !== 'function' || typeof g.removeEventListener !== 'function' || typeof g.navigator?.onLine !== 'boolean') return null;
  const global = g as EventGlobal;
  return {
    get online() {
      return global.navigator.onLine;
    },
    watch({ offline, online }) {
      const onOffline = () => offline();
      const onOnline = () => online();
      global.addEventListener('offline', onOffline);
      global.addEventListener('online', onOnline);
      return () => {
        global.removeEventListener('offline', onOffline);
        global.removeEventListener('online', onOnline);
      };
    },
  };
}
