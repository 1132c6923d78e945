import type { Database } from '../db/database.ts';
import { SYNC_CHANNELS } from '../services/sync/channels.ts';

export const CHANNELS = SYNC_CHANNELS;

/**
 * PostgreSQL LISTEN for the sync channel. On PostgreSQL, postgres.js keeps one dedicated
 * listening connection and re-subscribes after a reconnect; on PGlite (one process) the
 * notifications of committed transactions are delivered in-process.
 */
export interface Notifications {
  /**
   * `onResubscribed` runs when a lost listening connection is back: notifications sent while
   * it was down are gone, so the caller re-reads whatever they would have told it.
   */
  listen(channel: string, onPayload: (payload: string) => void, onResubscribed?: () => void): Promise<() => Promise<void>>;
}

export function notificationsOf(database: Database): Notifications {
  return {
    async listen(channel, onPayload, onResubscribed) {
      if (database.sql) {
        let first = true;
        const { unlisten } = await database.sql.listen(channel, onPayload, () => {
          if (!first) onResubscribed?.();
          first = false;
        });
        return unlisten;
      }
      if (database.pglite) {
        const unsubscribe = await database.pglite.listen(channel, onPayload);
        return unsubscribe;
      }
      throw new Error('No database connection to listen on');
    },
  };
}
