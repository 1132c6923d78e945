
import {
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  text,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { createdAt, ts, updatedAt } from './columns.ts';

export const users = pgTable(
  'users',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    /** Stored trimmed and lower-cased: sign-in, invitations and uniqueness all compare on it. */
    email: text('email').notNull(),
    passwordHash: text('password_hash'),
    firstName: text('first_name').notNull(),
    lastName: text('last_name').notNull(),
    phone: text('phone'),
    address: text('address'),
    discipline: text('discipline'),
    licenseNumber: text('license_number'),
    licenseState: text('license_state'),
    needsOnboarding: boolean('needs_onboarding').notNull().default(true),
    /** Subscription status is derived (subscriptionStatusOf), never stored: see store_purchases. */
    trialEndsAt: ts('trial_ends_at'),
    disabledAt: ts('disabled_at'),
    /**
     * When the owner proved they receive mail at `email` (a mailed code, the invitation
     * sign-up, a provider's verified email); cleared when the email changes. In-app
     * invitations are addressed by email, so they need it.
     */
    emailVerifiedAt: ts('email_verified_at'),
    /** Personal feature overrides; they apply only while the clinician is solo. */
    featureOverrides: jsonb('feature_overrides').$type<Record<string, boolean>>().notNull().default({}),
    passwordChangedAt: ts('password_changed_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex('users_email_key').on(t.email)],
);

/** A sign-in identity at Google or Apple: keyed by provider and subject, never by email. */
export const userIdentities = pgTable(
  'user_identities',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    provider: text('provider').notNull(),
    subject: text('subject').notNull(),
    createdAt: createdAt(),
    lastUsedAt: ts('last_used_at'),
  },
  (t) => [
    uniqueIndex('user_identities_provider_subject_key').on(t.provider, t.subject),
    index('user_identities_user_idx').on(t.userId),
  ],
);

/**
 * A signed-in device. Access tokens carry its id (`sid`); revoking it (logout, password
 * reset, reuse of a retired refresh token) invalidates every token of the family at once.
 */
export const sessions = pgTable(
  'sessions',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    method: text('method').notNull(),
    createdAt: createdAt(),
    lastRefreshedAt: ts('last_refreshed_at'),
    expiresAt: ts('expires_at').notNull(),
    revokedAt: ts('revoked_at'),
    revokedReason: text('revoked_reason'),
  },
  (t) => [index('sessions_user_idx').on(t.userId)],
);

export const refreshTokens = pgTable(
  'refresh_tokens',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    sessionId: uuid('session_id')
      .notNull()
      .references(() => sessions.id, { onDelete: 'cascade' }),
    /** SHA-256 of the opaque token: it has 256 random bits, so a fast hash is enough. */
    tokenHash: text('token_hash').notNull(),
    createdAt: createdAt(),
    expiresAt: ts('expires_at').notNull(),
    retiredAt: ts('retired_at'),
  },
  (t) => [uniqueIndex('refresh_tokens_hash_key').on(t.tokenHash), index('refresh_tokens_session_idx').on(t.sessionId)],
);

/** One password-reset flow: send-otp → verify-otp → reset. */
export const passwordResets = pgTable(
  'password_resets',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    flowTokenHash: text('flow_token_hash').notNull(),
    /** argon2id of the 6-digit code: a plain hash of a million possibilities would not hide it. */
    otpHash: text('otp_hash').notNull(),
    otpExpiresAt: ts('otp_expires_at').notNull(),
    attempts: integer('attempts').notNull().default(0),
    verifiedAt: ts('verified_at'),
    resetTokenHash: text('reset_token_hash'),
    resetExpiresAt: ts('reset_expires_at'),
    consumedAt: ts('consumed_at'),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('password_resets_flow_key').on(t.flowTokenHash),
    uniqueIndex('password_resets_reset_key').on(t.resetTokenHash),
    index('password_resets_user_idx').on(t.userId),
  ],
);

/**
 * Fixed-window counters shared by every server node (failed sign-ins, OTP sends). Keys are
 * hashed so that no email address sits in this table.
 */
export const throttles = pgTable('throttles', {
  key: text('key').primaryKey(),
  hits: integer('hits').notNull(),
  windowStartedAt: ts('window_started_at').notNull(),
  windowSeconds: integer('window_seconds').notNull(),
});

/** Idempotency-Key records: the first response to a POST/PUT, replayed to repeats. */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    scope: text('scope').notNull(),
    key: text('key').notNull(),
    requestHash: text('request_hash').notNull(),
    statusCode: integer('status_code'),
    responseBody: text('response_body'),
    createdAt: createdAt(),
    completedAt: ts('completed_at'),
  },
  (t) => [uniqueIndex('idempotency_keys_scope_key').on(t.scope, t.key), index('idempotency_keys_created_idx').on(t.createdAt)],
);

/**
 * Mail waiting for, or done with, delivery. The body is cleared once sent: it may hold
 * one-time codes or PHI, and the sent copy lives with the recipient (or in the .eml sink).
 */
export const mailOutbox = pgTable(
  'mail_outbox',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    toAddress: text('to_address').notNull(),
    subject: text('subject').notNull(),
    textBody: text('text_body'),
    kind: text('kind').notNull(),
    status: text('status').notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    lastError: text('last_error'),
    messageId: text('message_id'),
    storedAs: text('stored_as'),
    createdAt: createdAt(),
    sentAt: ts('sent_at'),
    /** Reply-To header (a conversation's `reply+<token>@…` address). */
    replyTo: text('reply_to'),
    /**
     * A mail that carries PHI (a message to a patient) keeps its recipient, subject and body
     * here, sealed with the PHI key ring as JSON, bound to `mail_outbox.phi_enc:<id>`; the
     * clear columns then hold a PHI-free label. Cleared when sent, like `text_body`.
     */
    phiEnc: text('phi_enc'),
    /** The clinician a PHI mail was sent for: deleting the account deletes it (cascade). */
    ownerId: uuid('owner_id').references(() => users.id, { onDelete: 'cascade' }),
  },
  (t) => [index('mail_outbox_created_idx').on(t.createdAt), index('mail_outbox_to_idx').on(t.toAddress)],
);

/** A pending email-verification code, bound to the address it was mailed to. */
export const emailVerifications = pgTable('email_verifications', {
  userId: uuid('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  email: text('email').notNull(),
  /** argon2id of the 6-digit code, like the reset code. */
  otpHash: text('otp_hash').notNull(),
  expiresAt: ts('expires_at').notNull(),
  attempts: integer('attempts').notNull().default(0),
  createdAt: createdAt(),
});

