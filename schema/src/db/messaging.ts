import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { users } from './accounts.ts';
import { createdAt, ts, updatedAt } from './columns.ts';
import { syncColumns } from './sync-columns.ts';

/*
 * Patient messaging (email-based) and the notification history. Columns ending in `_enc` hold
 * PHI sealed with the key ring, bound to `<table>.<column>:<row id>` like the clinical tables;
 * a conversation's row id is its integer id (drawn from the identity sequence before insert).
 */

/** One email thread between a clinician and a patient; `id` is the spec's integer conversation id. */
export const conversations = pgTable(
  'conversations',
  {
    id: integer('id').primaryKey().generatedByDefaultAsIdentity(),
    ownerId: uuid('owner_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    patientEmailEnc: text('patient_email_enc').notNull(),
    patientNameEnc: text('patient_name_enc').notNull(),
    subjectEnc: text('subject_enc'),
    /**
     * SHA-256 (hex) of the random token in the conversation's reply address
     * `reply+<token>@<MESSAGES_REPLY_DOMAIN>`: a leaked database does not give the addresses.
     */
    replyTokenHash: text('reply_token_hash').notNull(),
    /** The same token sealed with the PHI key ring, so every mail of the thread carries one address. */
    replyTokenEnc: text('reply_token_enc').notNull(),
    lastMessageAt: ts('last_message_at').notNull().defaultNow(),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex('conversations_reply_token_key').on(t.replyTokenHash), index('conversations_owner_idx').on(t.ownerId, t.lastMessageAt)],
);

/** A message of a conversation: `outbound` (clinician → patient) or `inbound` (a patient's reply). */
export const messages = pgTable(
  'messages',
  {
    id: uuid('id').primaryKey(),
    conversationId: integer('conversation_id')
      .notNull()
      .references(() => conversations.id, { onDelete: 'cascade' }),
    ownerId: uuid('owner_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    direction: text('direction').$type<'outbound' | 'inbound'>().notNull(),
    bodyEnc: text('body_enc').notNull(),
    subjectEnc: text('subject_enc'),
    /** Outbound messages are read when sent; inbound ones when the clinician marks them. */
    isRead: boolean('is_read').notNull().default(false),
    readAt: ts('read_at'),
    createdAt: createdAt(),
  },
  (t) => [index('messages_conversation_idx').on(t.conversationId, t.createdAt), index('messages_owner_unread_idx').on(t.ownerId, t.isRead)],
);

/**
 * What happened for a user (note ready, message received, …). Titles are fixed phrases free of
 * PHI; `data` holds ids only. Synced: the feed's `notifications` table.
 */
export const notifications = pgTable(
  'notifications',
  {
    id: uuid('id').primaryKey(),
    /** The user notified (named owner_id so the feed's owner triggers apply as to other synced rows). */
    ownerId: uuid('owner_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    type: text('type').notNull(),
    title: text('title').notNull(),
    body: text('body').notNull(),
    data: jsonb('data').$type<Record<string, string | number | boolean | null>>().notNull().default({}),
    isRead: boolean('is_read').notNull().default(false),
    readAt: ts('read_at'),
    createdAt: createdAt(),
    ...syncColumns(),
  },
  (t) => [index('notifications_owner_idx').on(t.ownerId, t.createdAt), index('notifications_owner_txid_idx').on(t.ownerId, t.txid)],
);
