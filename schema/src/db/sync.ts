import { bigint, bigserial, foreignKey, index, integer, jsonb, pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core';
import { sessions, users } from './accounts.ts';
import { visits } from './clinical.ts';
import { createdAt, ts, updatedAt } from './columns.ts';

/**
 * One row per device (client id) and user: the highest mutation id the server has processed
 * for it, advanced in the same transaction as the mutation (exactly-once).
 */
export const syncClients = pgTable(
  'sync_clients',
  {
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    clientId: uuid('client_id').notNull(),
    lastMutationId: bigint('last_mutation_id', { mode: 'number' }).notNull().default(0),
    /**
     * The mutation after `last_mutation_id` that failed on an unexpected server error, and how
     * many times in a row: after a few it is parked as failed (docs/sync-protocol.md) instead
     * of holding the device's queue for ever. Mutations are processed in order, so a device has
     * at most one such mutation at a time.
     */
    failingMutationId: bigint('failing_mutation_id', { mode: 'number' }),
    failingAttempts: integer('failing_attempts').notNull().default(0),
    /**
     * Set by an operator (`fieldchart device revoke`): the device is refused at hello and over
     * HTTP (4411 / 403 `device_revoked`) and its mutations are no longer applied.
     */
    revokedAt: ts('revoked_at'),
    /** The last hello this device said for this user (`fieldchart device list`). */
    lastSeenAt: ts('last_seen_at'),
    /**
     * The organization seat the device was last welcomed under: its synced data is that
     * organization's until it says hello with no cursor (docs/sync-protocol.md, Leaving an
     * organization).
     */
    syncedOrganizationId: uuid('synced_organization_id'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.clientId] })],
);

/**
 * The sessions a device has said hello with (recorded at hello): revoking the device
 * (`fieldchart device revoke`) revokes these sessions too, so the tokens it holds stop working
 * on the REST API and cannot be refreshed. A session normally has one device; a token copied
 * to another install links both, and revoking either ends it.
 */
export const syncClientSessions = pgTable(
  'sync_client_sessions',
  {
    userId: uuid('user_id').notNull(),
    clientId: uuid('client_id').notNull(),
    sessionId: uuid('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.userId, t.clientId, t.sessionId] }),
    foreignKey({ columns: [t.userId, t.clientId], foreignColumns: [syncClients.userId, syncClients.clientId] }).onDelete('cascade'),
    // The cascade from a deleted session (expired sessions are cleaned up) looks rows up by it.
    index('sync_client_sessions_session_idx').on(t.sessionId),
  ],
);

/**
 * The Yjs updates of a visit's draft SOAP note, appended as they arrive and compacted into
 * one merged update from time to time. Drafts are PHI: each update is sealed with the key
 * ring (`update_enc`, bound to the row id).
 */
export const draftUpdates = pgTable(
  'draft_updates',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    visitId: uuid('visit_id')
      .notNull()
      .references(() => visits.id, { onDelete: 'cascade' }),
    ownerId: uuid('owner_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    updateEnc: text('update_enc').notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('draft_updates_visit_idx').on(t.visitId, t.id)],
);

/**
 * The mutations the server refused, per device: a replay of one of them (its reject frame was
 * lost with the socket) is answered with the same reject, never taken for an applied write.
 * A mutation parked after repeated unexpected failures is kept here too, with status 500 and
 * code `mutation_failed`, and is answered `failed` again.
 * Holds the contract's error terms only (code, message, field messages) — no argument values.
 * Purged after 30 days by the hourly cleanup.
 */
export const syncRejections = pgTable(
  'sync_rejections',
  {
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    clientId: uuid('client_id').notNull(),
    mutationId: bigint('mutation_id', { mode: 'number' }).notNull(),
    status: integer('status').notNull(),
    code: text('code').notNull(),
    message: text('message').notNull(),
    errors: jsonb('errors').$type<Record<string, string[]>>(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.clientId, t.mutationId] }), index('sync_rejections_created_idx').on(t.createdAt)],
);

/**
 * What each processed mutation said, per device and per batch that processed it: the sha256 of
 * the canonical JSON of each one's name and arguments. A replayed id whose content differs was
 * sent by another install with the same client id (a restored backup, a cloned phone) and is
 * answered `conflict` on protocol 2 (docs/sync-protocol.md, Versioning). Only hashes: no
 * argument values. One row per batch, not per mutation: a device draining its outbox writes a
 * thousand digests in one row (a row each, with their index entries and foreign-key checks,
 * was about a fifteenth of a drain). Purged with `sync_rejections`, after 30 days; an id with no
 * digest left is answered as a duplicate.
 */
export const syncMutationDigestRuns = pgTable(
  'sync_mutation_digest_runs',
  {
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    clientId: uuid('client_id').notNull(),
    /** The batch's first and last processed ids: the runs of a device never overlap. */
    firstMutationId: bigint('first_mutation_id', { mode: 'number' }).notNull(),
    lastMutationId: bigint('last_mutation_id', { mode: 'number' }).notNull(),
    /** The ids the batch processed, rising. */
    mutationIds: bigint('mutation_ids', { mode: 'number' }).array().notNull(),
    /**
     * Their digests in the same order, one after the other: each the hex sha256 (64 characters)
     * of the canonical JSON (keys sorted at every depth) of `{ name, args }`.
     */
    digests: text('digests').notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.clientId, t.firstMutationId] }), index('sync_mutation_digest_runs_created_idx').on(t.createdAt)],
);
