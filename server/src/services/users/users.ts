import { and, asc, count, eq, ilike, isNotNull, isNull, or } from 'drizzle-orm';
import { users } from '@fieldchart/schema/db';
import type { UserProfile } from '@fieldchart/schema/api';
import { isUniqueViolation, type Db } from '../../db/database.ts';
import type { Clock } from '../../clock.ts';
import { Invalid, NotFound } from '../../errors.ts';
import { ACCOUNT_DISABLED, type Caller, type SessionExtra, type Sessions } from '../auth/sessions.ts';
import type { JoinRequests } from '../organizations/join-requests.ts';
import { readSubscriptionStatuses } from '../subscriptions/subscription-facts.ts';
import { findUserByEmail, findUserById, profileFacts, profileFromFacts, profileOf, readProfile, type ProfileFacts } from './user-profile.ts';
import { isUuid } from '../ids.ts';

export interface BasicInfo {
  first_name?: string | undefined;
  last_name?: string | undefined;
  email?: string | undefined;
  phone?: string | null | undefined;
  address?: string | null | undefined;
}

export interface Onboarding {
  discipline: string;
  license_number?: string | undefined;
  license_state?: string | undefined;
  /** Asks to join this organization (404 if unknown), unless the clinician already sits or asked. */
  organization_uuid?: string | undefined;
}

export interface UserListing {
  readonly uuid: string;
  readonly email: string;
  readonly first_name: string;
  readonly last_name: string;
  readonly subscription_status: string;
  readonly disabled: boolean;
  readonly created_at: string;
}

export function createUsers(deps: { db: Db; clock: Clock; sessions: Sessions; joinRequests: JoinRequests }) {
  const { db, clock } = deps;

  async function mustFind(userId: string) {
    const u = await findUserById(db, userId);
    if (!u) throw new NotFound('User not found', 'user_not_found');
    return u;
  }

  return {
    /** Selected with the session check of GET /my-profile: the profile costs no statement of its own. */
    profileExtra: { name: 'session_check_profile', column: profileFacts } satisfies SessionExtra,

    /** The caller's profile from the facts their session check brought, or read when it brought none. */
    async profileOfCaller(caller: Caller): Promise<UserProfile> {
      if (caller.extra === null) return this.profile(caller.userId);
      return profileFromFacts(caller.extra as ProfileFacts, clock.now());
    },

    async profile(userId: string): Promise<UserProfile> {
      const profile = await readProfile(db, userId, clock.now());
      if (!profile) throw new NotFound('User not found', 'user_not_found');
      return profile;
    },

    async updateBasicInfo(userId: string, input: BasicInfo): Promise<UserProfile> {
      const current = await mustFind(userId);
      if (input.email && input.email !== current.email) {
        const other = await findUserByEmail(db, input.email);
        if (other) throw Invalid.field('email', 'An account with this email already exists', 'email_taken');
      }
      try {
        const [u] = await db
          .update(users)
          .set({
            ...(input.first_name !== undefined && { firstName: input.first_name }),
            ...(input.last_name !== undefined && { lastName: input.last_name }),
            // A new address is unproven until its owner verifies it.
            ...(input.email !== undefined && input.email !== current.email && { email: input.email, emailVerifiedAt: null }),
            ...(input.phone !== undefined && { phone: input.phone || null }),
            ...(input.address !== undefined && { address: input.address || null }),
            updatedAt: clock.now(),
          })
          .where(eq(users.id, userId))
          .returning();
        if (!u) throw new NotFound('User not found', 'user_not_found');
        return profileOf(db, u, clock.now());
      } catch (err) {
        if (isUniqueViolation(err)) throw Invalid.field('email', 'An account with this email already exists', 'email_taken');
        throw err;
      }
    },

    async completeOnboarding(userId: string, input: Onboarding): Promise<UserProfile> {
      if (input.organization_uuid) await deps.joinRequests.requestDuringOnboarding(userId, input.organization_uuid);
      const [u] = await db
        .update(users)
        .set({
          discipline: input.discipline,
          ...(input.license_number !== undefined && { licenseNumber: input.license_number || null }),
          ...(input.license_state !== undefined && { licenseState: input.license_state || null }),
          needsOnboarding: false,
          updatedAt: clock.now(),
        })
        .where(eq(users.id, userId))
        .returning();
      if (!u) throw new NotFound('User not found', 'user_not_found');
      return profileOf(db, u, clock.now());
    },

    // Operator functions (CLI and admin socket).

    async list(opts: { search?: string; disabled?: boolean; limit?: number; offset?: number } = {}) {
      const filters = and(
        opts.search
          ? or(ilike(users.email, like(opts.search)), ilike(users.lastName, like(opts.search)), ilike(users.firstName, like(opts.search)))
          : undefined,
        opts.disabled === undefined ? undefined : opts.disabled ? isNotNull(users.disabledAt) : isNull(users.disabledAt),
      );
      const [rows, [total]] = await Promise.all([
        db
          .select()
          .from(users)
          .where(filters)
          .orderBy(asc(users.createdAt), asc(users.id))
          .limit(opts.limit ?? 100)
          .offset(opts.offset ?? 0),
        db.select({ n: count() }).from(users).where(filters),
      ]);
      const statuses = await readSubscriptionStatuses(db, rows, clock.now());
      const items: UserListing[] = rows.map((u) => ({
        uuid: u.id,
        email: u.email,
        first_name: u.firstName,
        last_name: u.lastName,
        subscription_status: statuses.get(u.id) ?? 'expired',
        disabled: u.disabledAt !== null,
        created_at: u.createdAt.toISOString(),
      }));
      return { total: Number(total?.n ?? 0), items };
    },

    /** Finds a user by uuid or email, for operators. */
    async lookup(idOrEmail: string) {
      // Only a well-formed uuid goes to the uuid column (anything else would be a type error there).
      const u = isUuid(idOrEmail) ? await findUserById(db, idOrEmail) : await findUserByEmail(db, idOrEmail);
      if (!u) throw new NotFound('User not found', 'user_not_found');
      return { ...(await profileOf(db, u, clock.now())), disabled_at: u.disabledAt?.toISOString() ?? null };
    },

    /** Disables (or re-enables) an account; disabling revokes every session at once. */
    async setDisabled(idOrEmail: string, disabled: boolean) {
      const target = await this.lookup(idOrEmail);
      await db.transaction(async (tx) => {
        await tx
          .update(users)
          .set({ disabledAt: disabled ? clock.now() : null, updatedAt: clock.now() })
          .where(eq(users.id, target.uuid));
        if (disabled) await deps.sessions.revokeAll(tx, target.uuid, ACCOUNT_DISABLED);
      });
      return this.lookup(target.uuid);
    },
  };
}

export type Users = ReturnType<typeof createUsers>;


/** A LIKE pattern matching `term` anywhere, with its own wildcards taken literally. */
function like(term: string): string {
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
