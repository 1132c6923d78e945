import { eq, sql } from 'drizzle-orm';
import { idempotencyKeys, mailOutbox, userIdentities, users } from '@fieldchart/schema/db';
import type { UserProfile } from '@fieldchart/schema/api';
import { isUniqueViolation, type Db } from '../../db/database.ts';
import type { Clock } from '../../clock.ts';
import type { Config } from '../../config.ts';
import { Invalid, NotFound, TooMany, Unauthorized } from '../../errors.ts';
import type { IdTokenVerifier, SocialProvider } from '../../security/id-token-verifier.ts';
import { burnVerification, hashSecret, verifySecret } from '../../security/passwords.ts';
import type { Throttle, ThrottleState } from '../throttle.ts';
import { findUserByEmail, findUserById, insertNewUser, loginDataOf, profileOf, type LoginData, type NewUser, type UserRow } from '../users/user-profile.ts';
import type { Principal, Sessions, TokenPair } from './sessions.ts';
import type { MailOutbox } from '../mail/mail-outbox.ts';
import { passwordChanged } from '../../mail/templates.ts';

export interface SignInResult extends TokenPair {
  loginData: LoginData;
  trial_ends_at: string | null;
  needs_onboarding: boolean;
}

export interface RegisterResult extends TokenPair {
  user: UserProfile;
  needs_onboarding: boolean;
}


export function createAccounts(deps: {
  db: Db;
  clock: Clock;
  config: Config;
  sessions: Sessions;
  throttle: Throttle;
  idTokens: IdTokenVerifier;
  mail: MailOutbox;
}) {
  const { db, clock, config, sessions, throttle } = deps;
  const limits = config.limits;
  const emailTaken = () => Invalid.field('email', 'An account with this email already exists', 'email_taken');

  async function insertUser(tx: Db, a: NewUser): Promise<UserRow> {
    try {
      return await insertNewUser(tx, a, { now: clock.now(), trialDays: config.trialDays });
    } catch (err) {
      if (isUniqueViolation(err)) throw emailTaken();
      throw err;
    }
  }

  const signInResult = async (u: UserRow, pair: TokenPair): Promise<SignInResult> => ({
    ...pair,
    loginData: await loginDataOf(db, u, clock.now()),
    trial_ends_at: u.trialEndsAt?.toISOString() ?? null,
    needs_onboarding: u.needsOnboarding,
  });

  async function verifyIdentity(provider: SocialProvider, idToken: string) {
    const identity = await deps.idTokens.verify(provider, idToken, clock.now());
    if (!identity) throw new Unauthorized('Invalid or expired ID token', 'invalid_id_token');
    return identity;
  }

  return {
    async register(input: { first_name: string; last_name: string; email: string; password: string }): Promise<RegisterResult> {
      if (await findUserByEmail(db, input.email)) throw emailTaken();
      const passwordHash = await hashSecret(input.password);
      return db.transaction(async (tx) => {
        const u = await insertUser(tx, {
          email: input.email,
          firstName: input.first_name,
          lastName: input.last_name,
          passwordHash,
        });
        const pair = await sessions.open(tx, u.id, 'password');
        return { ...pair, user: await profileOf(tx, u, clock.now()), needs_onboarding: true };
      });
    },

    async signIn(input: { email: string; password: string }, clientAddress: string): Promise<SignInResult> {
      const email = input.email.trim().toLowerCase();
      const window = limits.signinFailureWindowSeconds;
      const accountKey = ['signin-fail-account', email];
      const addressKey = ['signin-fail-address', clientAddress];
      // `uncounted` is 1 while this attempt is not yet in the counts.
      const refuseIfOver = (perAccount: ThrottleState, perAddress: ThrottleState, uncounted: 0 | 1) => {
        if (perAccount.hits + uncounted > limits.signinFailuresPerAccount) {
          throw new TooMany('Too many failed sign-in attempts; try again later', perAccount.retryAfterSeconds, 'too_many_attempts');
        }
        if (perAddress.hits + uncounted > limits.signinFailuresPerAddress) {
          throw new TooMany('Too many failed sign-in attempts from this network; try again later', perAddress.retryAfterSeconds, 'too_many_attempts');
        }
      };
      // Cheap refusal while locked, without counting the refused attempt.
      const [seenAccount, seenAddress] = await Promise.all([
        throttle.peek(db, accountKey, window),
        throttle.peek(db, addressKey, window),
      ]);
      refuseIfOver(seenAccount, seenAddress, 1);
      // Count the attempt as a failure before checking the password, so parallel guesses cannot
      // all pass under the limit (the check takes ~50 ms); a right password gives it back below.
      refuseIfOver(await throttle.hit(db, accountKey, window), await throttle.hit(db, addressKey, window), 0);
      const u = await findUserByEmail(db, email);
      const ok = u?.passwordHash ? await verifySecret(u.passwordHash, input.password) : (await burnVerification(input.password), false);
      if (!u || !ok) throw new Unauthorized('Invalid email or password', 'invalid_credentials');
      await throttle.clear(db, accountKey);
      await throttle.release(db, addressKey);
      if (u.disabledAt) throw new Unauthorized('This account is disabled', 'account_disabled');
      const pair = await db.transaction((tx) => sessions.open(tx, u.id, 'password'));
      return await signInResult(u, pair);
    },

    async signInSocial(input: { provider: SocialProvider; id_token: string }): Promise<SignInResult> {
      const identity = await verifyIdentity(input.provider, input.id_token);
      const [row] = await db
        .select({ user: users })
        .from(userIdentities)
        .innerJoin(users, eq(users.id, userIdentities.userId))
        .where(sql`${userIdentities.provider} = ${identity.provider} and ${userIdentities.subject} = ${identity.subject}`);
      if (!row) throw new Unauthorized('No account is linked to this sign-in; register first', 'account_not_found');
      if (row.user.disabledAt) throw new Unauthorized('This account is disabled', 'account_disabled');
      const pair = await db.transaction(async (tx) => {
        await tx
          .update(userIdentities)
          .set({ lastUsedAt: clock.now() })
          .where(sql`${userIdentities.provider} = ${identity.provider} and ${userIdentities.subject} = ${identity.subject}`);
        return sessions.open(tx, row.user.id, identity.provider);
      });
      return await signInResult(row.user, pair);
    },

    async registerSocial(input: {
      provider: SocialProvider;
      id_token: string;
      email: string;
      first_name: string;
      last_name: string;
    }): Promise<RegisterResult> {
      const identity = await verifyIdentity(input.provider, input.id_token);
      // The provider's verified address wins over what the client typed: an account's email
      // decides which invitations it sees.
      const email = identity.verifiedEmail ?? input.email;
      return db.transaction(async (tx) => {
        const [existing] = await tx
          .select({ id: userIdentities.id })
          .from(userIdentities)
          .where(sql`${userIdentities.provider} = ${identity.provider} and ${userIdentities.subject} = ${identity.subject}`);
        if (existing) throw new Invalid('An account already exists for this sign-in; sign in instead', { id_token: ['account already exists'] }, 'account_exists');
        if (await findUserByEmail(tx, email)) throw emailTaken();
        const u = await insertUser(tx, {
          email,
          firstName: input.first_name,
          lastName: input.last_name,
          passwordHash: null,
          emailVerifiedAt: identity.verifiedEmail === email ? clock.now() : null,
        });
        try {
          await tx.insert(userIdentities).values({ userId: u.id, provider: identity.provider, subject: identity.subject, lastUsedAt: clock.now() });
        } catch (err) {
          if (isUniqueViolation(err)) throw new Invalid('An account already exists for this sign-in', { id_token: ['account already exists'] }, 'account_exists');
          throw err;
        }
        const pair = await sessions.open(tx, u.id, identity.provider);
        return { ...pair, user: await profileOf(tx, u, clock.now()), needs_onboarding: true };
      });
    },

    async logout(principal: Principal): Promise<void> {
      await sessions.revoke(db, principal.sessionId, 'logout');
    },

    async changePassword(principal: Principal, input: { current_password: string; new_password: string }): Promise<void> {
      const u = await findUserById(db, principal.userId);
      if (!u) throw new Unauthorized();
      if (!u.passwordHash || !(await verifySecret(u.passwordHash, input.current_password))) {
        throw new Unauthorized('Current password is incorrect', 'invalid_password');
      }
      const passwordHash = await hashSecret(input.new_password);
      await db.transaction(async (tx) => {
        await tx
          .update(users)
          .set({ passwordHash, passwordChangedAt: clock.now(), updatedAt: clock.now() })
          .where(eq(users.id, u.id));
        await sessions.revokeAll(tx, u.id, 'password_changed', principal.sessionId);
        await deps.mail.enqueue(tx, u.email, passwordChanged({ firstName: u.firstName }));
      });
    },

    /**
     * Deletes the account and everything keyed to it (sessions, identities, reset flows via
     * cascades; queued mail to the address explicitly). An account without a password (social
     * sign-in only) confirms with a fresh ID token from a linked provider instead.
     */
    async deleteAccount(
      principal: Principal,
      input: { password?: string | undefined; provider?: SocialProvider | undefined; id_token?: string | undefined },
    ): Promise<void> {
      const u = await findUserById(db, principal.userId);
      if (!u) throw new NotFound('Account not found');
      if (u.passwordHash) {
        if (!input.password) throw Invalid.field('password', 'is required');
        if (!(await verifySecret(u.passwordHash, input.password))) throw new Unauthorized('Password is incorrect', 'invalid_password');
      } else {
        if (!input.provider || !input.id_token) {
          throw new Invalid('This account has no password: confirm with provider and id_token', {
            id_token: ['is required for an account without a password'],
          });
        }
        const identity = await verifyIdentity(input.provider, input.id_token);
        const [linked] = await db
          .select({ id: userIdentities.id })
          .from(userIdentities)
          .where(
            sql`${userIdentities.userId} = ${u.id} and ${userIdentities.provider} = ${identity.provider} and ${userIdentities.subject} = ${identity.subject}`,
          );
        if (!linked) throw new Unauthorized('The ID token does not belong to this account', 'invalid_id_token');
      }
      await db.transaction(async (tx) => {
        await tx.delete(mailOutbox).where(eq(mailOutbox.toAddress, u.email));
        // Stored idempotent responses of this user hold their data.
        await tx.delete(idempotencyKeys).where(eq(idempotencyKeys.scope, `user:${u.id}`));
        await tx.delete(users).where(eq(users.id, u.id));
      });
    },
  };
}

export type Accounts = ReturnType<typeof createAccounts>;
