/**
 * The sync channel's PostgreSQL notification channels (docs/sync-protocol.md, Several nodes);
 * the ones the triggers of migration 0008 send are spelled there too.
 */
export const SYNC_CHANNELS = {
  /** Payload: an owner id whose synced rows changed (trigger). */
  data: 'fieldchart_sync',
  /** Payload: a user whose sessions, account or seat changed (trigger). */
  session: 'fieldchart_session',
  /** Payload: `<user id>:<client id>:<socket id>` of a device that connected again. */
  client: 'fieldchart_client',
  /** Payload: a stored draft update (drafts-store.ts). */
  draft: 'fieldchart_draft',
} as const;
