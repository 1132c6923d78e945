import { bigint, bigserial, index, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { users } from './accounts.ts';
import { visits } from './clinical.ts';
import { createdAt, ts } from './columns.ts';

/*
 * Stored audio (server/src/services/audio). The bytes live in an object store (the data dir
 * or S3), encrypted in AES-256-GCM frames under a random per-file data key; the data key is
 * kept here wrapped by the PHI key ring (`data_key_enc`, `fc1.<key id>.…`, bound to
 * `audio_files.data_key_enc:<id>`), so key rotation re-wraps it (services/phi-columns.ts) and
 * the key id that protects a file is the one named in that value.
 */

export const audioFiles = pgTable(
  'audio_files',
  {
    id: uuid('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    // Deleting the visit (or the account, which cascades to it) removes the row; a trigger
    // (custom migration audio_deletions) queues its object in `audio_deletions`, and the
    // hourly cleanup deletes the object from the store.
    visitId: uuid('visit_id')
      .notNull()
      .references(() => visits.id, { onDelete: 'cascade' }),
    /** m4a | wav | mp3, decided from the bytes. */
    format: text('format').notNull(),
    /** Plaintext size. */
    bytes: bigint('bytes', { mode: 'number' }).notNull(),
    /** 'local' | 's3': the store that holds `storage_key`. */
    store: text('store').notNull(),
    storageKey: text('storage_key').notNull(),
    dataKeyEnc: text('data_key_enc').notNull(),
    /** 'visit_audio' (POST /visit-audio-upload) | 'ai' (POST /ai/process-audio). */
    purpose: text('purpose').notNull(),
    createdAt: createdAt(),
  },
  (t) => [index('audio_files_user_idx').on(t.userId), index('audio_files_visit_idx').on(t.visitId)],
);

/**
 * Resumable (tus) uploads in progress. The partial bytes are encrypted frames in the data dir
 * (`audio/uploads/<id>`) under `data_key_enc`; `offset` counts the plaintext bytes committed.
 */
export const audioUploads = pgTable(
  'audio_uploads',
  {
    id: text('id').primaryKey(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    /** Declared Upload-Length; null while deferred. */
    size: bigint('size', { mode: 'number' }),
    offset: bigint('offset', { mode: 'number' }).notNull().default(0),
    /** Encrypted frames written so far (the next frame's index). */
    frames: bigint('frames', { mode: 'number' }).notNull().default(0),
    /** Length of the encrypted file that holds `offset`: anything after it (a crash mid-append) is cut before the next append. */
    cipherBytes: bigint('cipher_bytes', { mode: 'number' }).notNull().default(0),
    dataKeyEnc: text('data_key_enc').notNull(),
    createdAt: createdAt(),
    expiresAt: ts('expires_at').notNull(),
  },
  (t) => [index('audio_uploads_user_idx').on(t.userId), index('audio_uploads_expires_idx').on(t.expiresAt)],
);

/**
 * Objects whose `audio_files` row is gone (deleted directly or by a cascade from a visit or an
 * account), filled by an AFTER DELETE trigger and drained by `services.audio.purgeDeleted()`.
 */
export const audioDeletions = pgTable('audio_deletions', {
  id: bigserial('id', { mode: 'number' }).primaryKey(),
  store: text('store').notNull(),
  storageKey: text('storage_key').notNull(),
  createdAt: createdAt(),
});
