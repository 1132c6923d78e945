import { and, eq, isNull } from 'drizzle-orm';
import { invitations, organizations } from '@fieldchart/schema/db';
import { isUniqueViolation, type Db } from '../../db/database.ts';
import { addSeconds, type Clock } from '../../clock.ts';
import type { Config } from '../../config.ts';
import { Invalid, NotFound, TooMany, Unauthorized } from '../../errors.ts';
import { invitationCode } from '../../mail/templates.ts';
import { hashSecret } from '../../security/passwords.ts';
import { newOpaqueToken, sha256 } from '../../security/random-tokens.ts';
import { issueOneTimeCode, tryOneTimeCode } from '../auth/one-time-code.ts';
import type { Sessions, TokenPair } from '../auth/sessions.ts';
import type { MailOutbox } from '../mail/mail-outbox.ts';
import type { Throttle } from '../throttle.ts';
import { findUserByEmail, findUserById, insertNewUser, loginDataOf, type LoginData } from '../users/user-profile.ts';
import type { Membership } from './membership.ts';
import type { InvitationRow } from './records.ts';
import type { MemberRole } from './seats.ts';

const HOUR = 3600;

export interface InvitationSignupResult extends TokenPair {
  loginData: LoginData;
  trial_ends_at: string | null;
  needs_onboarding: boolean;
}

const invalidToken = () => new NotFound('This invitation link is invalid or has expired', 'invalid_invitation_token');
const invalidOtp = () => new Unauthorized('Invalid or expired code', 'invalid_otp');
const accountExists = () =>
  Invalid.field('email', 'An account with this email already exists: sign in and accept the invitation under Organization', 'email_taken');

/**
 * Account creation from an emailed invitation (spec: Authentication rule 10; contract:
 * invitation OTP): /accept-invitation mails a 6-digit code to the invited address →
 * /invite-otp-verify answers an opaque verification id → /set-new-password creates the
 * account, seats it and signs it in. The code is random, argon2id-hashed, valid
 * OTP_TTL_SECONDS and burned after OTP_MAX_ATTEMPTS wrong tries; a new /accept-invitation
 * replaces it. The verification id has 256 bits, is stored as SHA-256 and is valid for
 * RESET_TOKEN_TTL_SECONDS. Finishing consumes the invitation, so its token works once.
 */
export function createInvitationSignup(deps: {
  db: Db;
  clock: Clock;
  config: Config;
  throttle: Throttle;
  sessions: Sessions;
  mail: MailOutbox;
  membership: Membership;
}) {
  const { db, clock, throttle } = deps;
  const limits = deps.config.limits;

  /** The open invitation behind a token, with its organization's name. */
  async function openByToken(tx: Db, token: string): Promise<{ invitation: InvitationRow; organizationName: string } | null> {
    const [row] = await tx
      .select({ invitation: invitations, organizationName: organizations.name })
      .from(invitations)
      .innerJoin(organizations, eq(organizations.id, invitations.organizationId))
      .where(eq(invitations.tokenHash, sha256(token)));
    if (!row || row.invitation.status !== 'pending' || row.invitation.expiresAt <= clock.now()) return null;
    return row;
  }

  return {
    /** POST /accept-invitation: 404 for an invalid or expired token; 422 when the account exists already. */
    async acceptInvitation(token: string, clientAddress: string): Promise<{ email: string; organization_name: string }> {
      // The same per-address budget as reset codes: one address cannot mail codes without end.
      const perAddress = await throttle.hit(db, ['otp-send-address', clientAddress], HOUR);
      if (perAddress.hits > limits.otpSendsPerAddressPerHour) {
        throw new TooMany('Too many codes requested; try again later', perAddress.retryAfterSeconds, 'too_many_attempts');
      }
      const found = await openByToken(db, token);
      if (!found) throw invalidToken();
      const { invitation } = found;
      if (await findUserByEmail(db, invitation.email)) throw accountExists();
      const sends = await throttle.hit(db, ['invite-otp-send', invitation.id], HOUR);
      if (sends.hits > limits.otpSendsPerEmailPerHour) {
        throw new TooMany('Too many codes requested for this invitation; try again later', sends.retryAfterSeconds, 'too_many_attempts');
      }
      const now = clock.now();
      const issued = await issueOneTimeCode(limits, now);
      await db.transaction(async (tx) => {
        await tx
          .update(invitations)
          .set({
            otpHash: issued.otpHash,
            otpExpiresAt: issued.expiresAt,
            otpAttempts: 0,
            verificationHash: null,
            verifiedAt: null,
          })
          .where(and(eq(invitations.id, invitation.id), eq(invitations.status, 'pending')));
        await deps.mail.enqueue(
          tx,
          invitation.email,
          invitationCode({ organizationName: found.organizationName, code: issued.code, validMinutes: issued.validMinutes }),
        );
      });
      return { email: invitation.email, organization_name: found.organizationName };
    },

    /** POST /invite-otp-verify: 401 for a wrong, expired or burned code (or an unusable token). */
    async verifyOtp(token: string, otp: string): Promise<{ id: string }> {
      const found = await openByToken(db, token);
      const inv = found?.invitation;
      if (!inv?.otpHash) throw invalidOtp();
      const otpHash = inv.otpHash;
      const stored = { otpHash, expiresAt: inv.otpExpiresAt, attempts: inv.otpAttempts };
      const ok = await tryOneTimeCode(stored, otp, clock.now(), limits, async (seen) => {
        const [counted] = await db
          .update(invitations)
          .set({ otpAttempts: seen + 1 })
          .where(and(eq(invitations.id, inv.id), eq(invitations.otpAttempts, seen), eq(invitations.otpHash, otpHash)))
          .returning({ id: invitations.id });
        return counted !== undefined;
      });
      if (!ok) throw invalidOtp();
      const id = newOpaqueToken();
      // The code is used up: a second verify with it fails.
      const [verified] = await db
        .update(invitations)
        .set({ otpHash: null, otpExpiresAt: null, verificationHash: sha256(id), verifiedAt: clock.now() })
        .where(and(eq(invitations.id, inv.id), eq(invitations.otpHash, otpHash), eq(invitations.status, 'pending')))
        .returning({ id: invitations.id });
      if (!verified) throw invalidOtp();
      return { id };
    },

    /**
     * POST /set-new-password: creates the account for the invited address (names from the
     * body, else from the invitation, else the address's local part), seats it with the
     * invited role, consumes the invitation and opens a session.
     */
    async setNewPassword(input: {
      token: string;
      id: string;
      password: string;
      first_name?: string | undefined;
      last_name?: string | undefined;
    }): Promise<InvitationSignupResult> {
      const found = await openByToken(db, input.token);
      if (!found) throw invalidToken();
      const inv = found.invitation;
      const verificationOk =
        inv.verificationHash !== null &&
        inv.verificationHash === sha256(input.id) &&
        inv.verifiedAt !== null &&
        addSeconds(inv.verifiedAt, limits.resetTokenTtlSeconds) > clock.now();
      if (!verificationOk) {
        throw Invalid.field('id', 'is invalid or expired; verify the emailed code again', 'invalid_verification');
      }
      if (await findUserByEmail(db, inv.email)) throw accountExists();
      const passwordHash = await hashSecret(input.password);
      const now = clock.now();
      return db.transaction(async (tx) => {
        const [consumed] = await tx
          .update(invitations)
          .set({ status: 'accepted', respondedAt: now, verificationHash: null })
          .where(and(eq(invitations.id, inv.id), eq(invitations.status, 'pending'), eq(invitations.verificationHash, sha256(input.id))))
          .returning({ id: invitations.id });
        if (!consumed) throw invalidToken();
        let userId: string;
        try {
          const u = await insertNewUser(
            tx,
            {
              email: inv.email,
              firstName: input.first_name ?? inv.firstName ?? inv.email.split('@')[0] ?? inv.email,
              lastName: input.last_name ?? inv.lastName ?? '',
              passwordHash,
              // The code that reached this address proved the mailbox.
              emailVerifiedAt: now,
            },
            { now, trialDays: deps.config.trialDays },
          );
          userId = u.id;
        } catch (err) {
          if (isUniqueViolation(err)) throw accountExists();
          throw err;
        }
        await tx.update(invitations).set({ acceptedUserId: userId }).where(and(eq(invitations.id, inv.id), isNull(invitations.acceptedUserId)));
        await deps.membership.seatUser(tx, inv.organizationId, userId, inv.role as MemberRole);
        const pair = await deps.sessions.open(tx, userId, 'password');
        const user = await findUserById(tx, userId);
        if (!user) throw new Error('new user vanished');
        return { ...pair, loginData: await loginDataOf(tx, user, now), trial_ends_at: user.trialEndsAt?.toISOString() ?? null, needs_onboarding: user.needsOnboarding };
      });
    },
  };
}

export type InvitationSignup = ReturnType<typeof createInvitationSignup>;
