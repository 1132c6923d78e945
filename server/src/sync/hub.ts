/**
 * The sync channel's node-local hub (docs/sync-protocol.md), independent of the web framework:
 * `handleConnection` takes an upgraded socket; the hub holds the sockets of this node by user
 * and routes the PostgreSQL notifications that reach them from any node (Several nodes). It
 * does framing, ordering and timers only — every read and write of the database is one of the
 * hooks it is given (hooks.ts; service-hooks.ts builds them from the services).
 */
import type { IncomingMessage } from 'node:http';
import type { WebSocket } from 'ws';
import type { Clock } from '../clock.ts';
import { safeError } from '../log-safety.ts';
import type { SyncMetrics } from '../metrics/sync-metrics.ts';
import { pokeTableOf } from '../services/sync/feed.ts';
import { SyncConnection } from './connection.ts';
import { ONE_SESSION_UPLOAD, type ConnectionHost, type HeldConnection, type SyncHooks, type SyncLog, type UploadWindow } from './hooks.ts';
import { CHANNELS, type Notifications } from './notifications.ts';

/** Sockets one user may hold on a node (docs: Limits). */
export const MAX_SOCKETS_PER_USER = 10;
/** The largest frame a device may send: a signature image fits. */
export const MAX_FRAME_BYTES = 4 * 1024 * 1024;
/**
 * Every socket is pinged this often, all on one timer: an idle socket costs no timer of its
 * own (a node may hold thousands).
 */
const PING_INTERVAL_MS = 30_000;

export interface SyncHub {
  /** Takes over an upgraded websocket: the device's first message must be hello. */
  handleConnection(socket: WebSocket, request?: IncomingMessage): void;
  /** Subscribes to the notification channels; call once the database is migrated. */
  start(): Promise<void>;
  /** Closes every socket with 1001 (the device reconnects elsewhere) and stops listening. */
  close(): Promise<void>;
  /** Sockets open on this node (health and tests). */
  size(): number;
}

export function createSyncHub(deps: {
  hooks: SyncHooks;
  notifications: Notifications;
  clock: Clock;
  log: SyncLog;
  maxSocketsPerUser?: number;
  metrics?: SyncMetrics;
  /** Protocol 3's upload window; ONE_SESSION_UPLOAD when not given. */
  upload?: UploadWindow;
}): SyncHub {
  const { hooks, log } = deps;
  const maxSocketsPerUser = deps.maxSocketsPerUser ?? MAX_SOCKETS_PER_USER;
  const byUser = new Map<string, Set<HeldConnection>>();
  const unlisteners: Array<() => Promise<void>> = [];
  const pings = setInterval(() => {
    for (const set of byUser.values()) for (const c of set) c.heartbeat();
  }, PING_INTERVAL_MS);
  pings.unref();

  const all = (): HeldConnection[] => [...byUser.values()].flatMap((set) => [...set]);
  deps.metrics?.observe({ sockets: () => all().length, queueDepth: () => all().reduce((n, c) => n + c.queueDepth, 0) });
  const host: ConnectionHost = {
    hooks,
    log,
    upload: deps.upload ?? ONE_SESSION_UPLOAD,
    now: () => deps.clock.now(),
    hasRoomFor(userId, clientId) {
      let others = 0;
      for (const c of byUser.get(userId) ?? []) if (c.clientId !== clientId) others++;
      return others < maxSocketsPerUser;
    },
    attach(connection) {
      for (const other of byUser.get(connection.userId) ?? []) {
        if (other.clientId === connection.clientId) other.close('superseded', 'Connected again from the same device');
      }
      let set = byUser.get(connection.userId);
      if (!set) byUser.set(connection.userId, (set = new Set()));
      set.add(connection);
      // Other nodes close their socket of this device too.
      void hooks.announce(connection.userId, connection.clientId, connection.id).catch((err: unknown) => log.warn({ err: safeError(err) }, 'could not announce sync client'));
    },
    detach(connection) {
      hooks.drafts.detach(connection);
      const set = byUser.get(connection.userId);
      if (!set) return;
      set.delete(connection);
      if (set.size === 0) byUser.delete(connection.userId);
    },
  };

  // A notification names a user: only that user's sockets on this node do anything.
  const forUser = (userId: string, fn: (c: HeldConnection) => void | Promise<void>) => {
    const set = byUser.get(userId);
    if (!set) return;
    for (const c of set) {
      void Promise.resolve(fn(c)).catch((err: unknown) => log.error({ err: safeError(err) }, 'sync notification handling failed'));
    }
  };
  const everyone = () => {
    for (const c of all()) {
      c.requestFeed();
      void c.recheck().catch((err: unknown) => log.error({ err: safeError(err) }, 'sync recheck failed'));
    }
  };

  return {
    handleConnection(socket) {
      new SyncConnection(socket, host);
    },
    async start() {
      const { notifications } = deps;
      unlisteners.push(
        await notifications.listen(
          CHANNELS.data,
          (payload) => {
            // `<owner id>:<table>` (migration 0026), or the owner alone: every table.
            const [userId = '', table] = payload.split(':');
            const poked = table === undefined ? null : pokeTableOf(table);
            forUser(userId, (c) => c.requestFeed(poked));
          },
          everyone,
        ),
        await notifications.listen(CHANNELS.session, (userId) => forUser(userId, (c) => c.recheck()), everyone),
        await notifications.listen(CHANNELS.client, (payload) => {
          const [userId = '', clientId = '', connectionId = ''] = payload.split(':');
          forUser(userId, (c) => {
            if (c.clientId === clientId && c.id !== connectionId) c.close('superseded', 'Connected again from the same device');
          });
        }),
        await notifications.listen(CHANNELS.draft, (payload) => {
          void hooks.drafts.onNotification(payload).catch((err: unknown) => log.error({ err: safeError(err) }, 'draft notification failed'));
        }),
      );
    },
    async close() {
      clearInterval(pings);
      for (const c of all()) c.close('going_away', 'Server shutting down');
      for (const unlisten of unlisteners.splice(0)) await unlisten().catch(() => {});
    },
    size: () => all().length,
  };
}
