import { eq, sql } from 'drizzle-orm';
import { userIdentities, users } from '@fieldchart/schema/db';
import { subscriptionStatusOf, type UserProfile } from '@fieldchart/schema/api';
import type { Db } from '../../db/database.ts';
import { rowFromJson, runPrepared } from '../../db/one-statement.ts';
import { readSubscription } from '../subscriptions/subscription-facts.ts';

export type UserRow = typeof users.$inferSelect;

export interface LoginData {
  readonly uuid: string;
  readonly first_name: string;
  readonly last_name: string;
  readonly email: string;
  readonly subscription_status: UserProfile['subscription_status'];
}

/** Sign-in's loginData; the status comes from the one rule (readSubscription), as of `now`. */
export async function loginDataOf(db: Db, u: UserRow, now: Date): Promise<LoginData> {
  const { subscription_status } = await readSubscription(db, u, now);
  return { uuid: u.id, first_name: u.firstName, last_name: u.lastName, email: u.email, subscription_status };
}

export async function profileOf(db: Db, u: UserRow, now: Date): Promise<UserProfile> {
  const [identities, login] = await Promise.all([
    db.select({ provider: userIdentities.provider }).from(userIdentities).where(eq(userIdentities.userId, u.id)),
    loginDataOf(db, u, now),
  ]);
  return profileFrom(u, login, identities.map((i) => i.provider));
}

/** What GET /my-profile is made of, as `profileFacts` selects it. */
export interface ProfileFacts {
  readonly u: Record<string, unknown>;
  readonly providers: string[];
  readonly seated: boolean;
  readonly purchase: string | null;
}

/**
 * The facts of GET /my-profile as one JSON value over a row of `users` in scope: the user row,
 * their sign-in providers and the facts of their subscription status (seat, current purchase
 * — as readSubscription reads them). Selected beside the session check (one statement per
 * request) or on its own (readProfile).
 */
export const profileFacts = sql<ProfileFacts>`json_build_object('u', to_json(users),
    'providers', coalesce((select json_agg(i.provider) from user_identities i where i.user_id = users.id), '[]'),
    'seated', exists (select 1 from organization_members m where m.user_id = users.id),
    'purchase', (select p.expires_at from store_purchases p where p.user_id = users.id and p.revoked_at is null order by p.expires_at desc limit 1))`;

/** The profile from its facts, the status decided by the one rule as of `now`. */
export function profileFromFacts(facts: ProfileFacts, now: Date): UserProfile {
  const u = rowFromJson(users, facts.u);
  const purchase = facts.purchase === null ? null : { expiresAt: new Date(facts.purchase) };
  const subscription_status = subscriptionStatusOf({ trialEndsAt: u.trialEndsAt, purchase, seated: facts.seated, now });
  return profileFrom(u, { uuid: u.id, first_name: u.firstName, last_name: u.lastName, email: u.email, subscription_status }, facts.providers);
}

/** GET /my-profile's facts in one prepared statement, for a caller not checked with them. Null when there is no such user. */
export async function readProfile(db: Db, userId: string, now: Date): Promise<UserProfile | null> {
  const [row] = await runPrepared<{ r: ProfileFacts }>(db, 'my_profile', sql`select ${profileFacts} as r from users where users.id = ${userId}::uuid`);
  return row ? profileFromFacts(row.r, now) : null;
}

function profileFrom(u: UserRow, login: LoginData, providers: readonly string[]): UserProfile {
  return {
    ...login,
    phone: u.phone,
    address: u.address,
    discipline: u.discipline,
    license_number: u.licenseNumber,
    license_state: u.licenseState,
    needs_onboarding: u.needsOnboarding,
    trial_ends_at: u.trialEndsAt?.toISOString() ?? null,
    email_verified: u.emailVerifiedAt !== null,
    has_password: u.passwordHash !== null,
    linked_providers: [...new Set(providers as ReadonlyArray<'google' | 'apple'>)].sort(),
    created_at: u.createdAt.toISOString(),
  };
}

export async function findUserById(db: Db, id: string): Promise<UserRow | null> {
  const [u] = await db.select().from(users).where(eq(users.id, id));
  return u ?? null;
}

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | null> {
  const [u] = await db.select().from(users).where(eq(users.email, email.trim().toLowerCase()));
  return u ?? null;
}

export interface NewUser {
  readonly email: string;
  readonly firstName: string;
  readonly lastName: string;
  readonly passwordHash: string | null;
  /** Set when the way in proved the mailbox (invitation code, provider-verified email). */
  readonly emailVerifiedAt?: Date | null;
}

/**
 * Inserts a new account on its trial: every way in (register, social register, invitation
 * sign-up) creates users through this. A duplicate email surfaces as a unique violation for
 * the caller to word.
 */
export async function insertNewUser(tx: Db, user: NewUser, opts: { now: Date; trialDays: number }): Promise<UserRow> {
  const [u] = await tx
    .insert(users)
    .values({
      ...user,
      trialEndsAt: new Date(opts.now.getTime() + opts.trialDays * 86_400_000),
      createdAt: opts.now,
      updatedAt: opts.now,
    })
    .returning();
  if (!u) throw new Error('user insert returned nothing');
  return u;
}
