import { sql } from 'drizzle-orm';
import { boolean, check, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { users } from './accounts.ts';
import { createdAt, ts, updatedAt } from './columns.ts';
import { syncColumns } from './sync-columns.ts';

/**
 * `status`: `requested` (a clinician asked for it; unlisted until an operator approves),
 * `unclaimed` (created by /organizations/invite; private until its contact claims it),
 * `active`. Only `listed` organizations appear in search.
 */
export const organizations = pgTable(
  'organizations',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    name: text('name').notNull(),
    email: text('email'),
    phone: text('phone'),
    address: text('address'),
    type: text('type').notNull(),
    status: text('status').notNull(),
    listed: boolean('listed').notNull().default(false),
    backOfficeConnected: boolean('back_office_connected').notNull().default(false),
    /** Feature key → boolean; a key absent falls back to the type default. */
    featureOverrides: jsonb('feature_overrides').$type<Record<string, boolean>>().notNull().default({}),
    terminologyOverrides: jsonb('terminology_overrides').$type<Record<string, string>>().notNull().default({}),
    requestedBy: uuid('requested_by').references(() => users.id, { onDelete: 'set null' }),
    approvedAt: ts('approved_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    ...syncColumns(),
  },
  (t) => [
    index('organizations_name_idx').on(sql`lower(${t.name})`),
    check('organizations_type_check', sql`${t.type} in ('staffing_company','home_health_agency','clinic','private_practice','hospital')`),
    check('organizations_status_check', sql`${t.status} in ('requested','unclaimed','active')`),
  ],
);

/** A seat: a user sits in at most one organization. */
export const organizationMembers = pgTable(
  'organization_members',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    role: text('role').notNull().default('member'),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('organization_members_user_key').on(t.userId),
    index('organization_members_org_idx').on(t.organizationId),
    check('organization_members_role_check', sql`${t.role} in ('member','admin')`),
  ],
);

export const joinRequests = pgTable(
  'join_requests',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    status: text('status').notNull().default('pending'),
    createdAt: createdAt(),
    decidedAt: ts('decided_at'),
    decidedBy: uuid('decided_by').references(() => users.id, { onDelete: 'set null' }),
  },
  (t) => [
    uniqueIndex('join_requests_pending_key').on(t.organizationId, t.userId).where(sql`${t.status} = 'pending'`),
    index('join_requests_user_idx').on(t.userId),
    check('join_requests_status_check', sql`${t.status} in ('pending','approved','rejected')`),
  ],
);

/**
 * An admin's invitation to an email. The token (mailed as {APP_URL}/invite/{token}) and the
 * OTP of the account-creation flow are stored hashed; at most one pending per (org, email).
 */
export const invitations = pgTable(
  'invitations',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    email: text('email').notNull(),
    role: text('role').notNull().default('member'),
    firstName: text('first_name'),
    lastName: text('last_name'),
    status: text('status').notNull().default('pending'),
    tokenHash: text('token_hash').notNull(),
    expiresAt: ts('expires_at').notNull(),
    invitedBy: uuid('invited_by').references(() => users.id, { onDelete: 'set null' }),
    otpHash: text('otp_hash'),
    otpExpiresAt: ts('otp_expires_at'),
    otpAttempts: integer('otp_attempts').notNull().default(0),
    /** SHA-256 of the id handed out by /invite-otp-verify; /set-new-password must present it. */
    verificationHash: text('verification_hash'),
    verifiedAt: ts('verified_at'),
    acceptedUserId: uuid('accepted_user_id').references(() => users.id, { onDelete: 'set null' }),
    createdAt: createdAt(),
    respondedAt: ts('responded_at'),
  },
  (t) => [
    uniqueIndex('invitations_token_key').on(t.tokenHash),
    uniqueIndex('invitations_pending_key').on(t.organizationId, t.email).where(sql`${t.status} = 'pending'`),
    index('invitations_email_idx').on(t.email),
    check('invitations_status_check', sql`${t.status} in ('pending','accepted','declined','revoked','expired')`),
    check('invitations_role_check', sql`${t.role} in ('member','admin')`),
  ],
);

/** A clinician's invitation to an organization that is not on Fieldchart yet. */
export const organizationClaims = pgTable(
  'organization_claims',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    organizationName: text('organization_name').notNull(),
    contactEmail: text('contact_email').notNull(),
    contactName: text('contact_name'),
    message: text('message'),
    inviterUserId: uuid('inviter_user_id').references(() => users.id, { onDelete: 'set null' }),
    status: text('status').notNull().default('open'),
    tokenHash: text('token_hash').notNull(),
    expiresAt: ts('expires_at').notNull(),
    createdAt: createdAt(),
    consumedAt: ts('consumed_at'),
    consumedBy: uuid('consumed_by').references(() => users.id, { onDelete: 'set null' }),
  },
  (t) => [
    uniqueIndex('organization_claims_token_key').on(t.tokenHash),
    uniqueIndex('organization_claims_open_key')
      .on(sql`lower(${t.organizationName})`, t.contactEmail)
      .where(sql`${t.status} = 'open'`),
    check('organization_claims_status_check', sql`${t.status} in ('open','consumed','expired')`),
  ],
);
