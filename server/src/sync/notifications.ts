import type { Database } from '../db/database.ts';

/**
 * The sync channel's PostgreSQL notification channels (docs/sync-protocol.md, Several nodes);
 * the ones the triggers of migration 0008 send are spelled there too.
 */
export const CHANNELS = {
  /** Payload: an owner id whose synced rows changed (trigger). */
  data: 'fieldchart_sync',
  /** Payload: a user whose sessions, account or seat changed (trigger). */
  session: 'fieldchart_session',
  /** Payload: `<user id>:<client id>:<socket id>` of a device that connected again. */
  client: 'fieldchart_client',
  /** Payload: a stored draft update (drafts-store.ts). */
  draft: 'fieldchart_draft',
} as const;

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
