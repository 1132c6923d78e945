import { and, eq } from 'drizzle-orm';
import { emailVerifications, users } from '@fieldchart/schema/db';
import type { Db } from '../../db/database.ts';
import type { Clock } from '../../clock.ts';
import type { Config } from '../../config.ts';
import { Conflict, NotFound, TooMany, Unauthorized } from '../../errors.ts';
import { emailVerificationCode } from '../../mail/templates.ts';
import type { MailOutbox } from '../mail/mail-outbox.ts';
import { issueOneTimeCode, tryOneTimeCode } from './one-time-code.ts';
import type { Throttle } from '../throttle.ts';
import { findUserById } from '../users/user-profile.ts';

const HOUR = 3600;

/**
 * Proof that the account's owner receives mail at its email: a 6-digit code mailed to the
 * address, entered in the app. Same rules as the reset code (argon2id-hashed, OTP_TTL_SECONDS,
 * single use, burned after OTP_MAX_ATTEMPTS wrong tries, OTP_SENDS_PER_EMAIL_PER_HOUR sends),
 * and the code is bound to the address it went to: changing the email voids it.
 */
export function createEmailVerification(deps: { db: Db; clock: Clock; config: Config; throttle: Throttle; mail: MailOutbox }) {
  const { db, clock, throttle } = deps;
  const limits = deps.config.limits;
  const invalidCode = () => new Unauthorized('Invalid or expired code', 'invalid_otp');

  return {
    async sendCode(userId: string): Promise<void> {
      const u = await findUserById(db, userId);
      if (!u) throw new NotFound('User not found', 'user_not_found');
      if (u.emailVerifiedAt) throw new Conflict('This email address is already verified', 'email_already_verified');
      const sends = await throttle.hit(db, ['verify-email-send', u.id], HOUR);
      if (sends.hits > limits.otpSendsPerEmailPerHour) {
        throw new TooMany('Too many verification codes requested; try again later', sends.retryAfterSeconds, 'too_many_attempts');
      }
      const now = clock.now();
      const issued = await issueOneTimeCode(limits, now);
      await db.transaction(async (tx) => {
        const row = { userId: u.id, email: u.email, otpHash: issued.otpHash, expiresAt: issued.expiresAt, attempts: 0, createdAt: now };
        // A new code replaces the previous one.
        await tx.insert(emailVerifications).values(row).onConflictDoUpdate({ target: emailVerifications.userId, set: row });
        await deps.mail.enqueue(
          tx,
          u.email,
          emailVerificationCode({ firstName: u.firstName, code: issued.code, validMinutes: issued.validMinutes }),
        );
      });
    },

    async verify(userId: string, otp: string): Promise<void> {
      const now = clock.now();
      const [found] = await db
        .select({ pending: emailVerifications, email: users.email })
        .from(emailVerifications)
        .innerJoin(users, eq(users.id, emailVerifications.userId))
        .where(eq(emailVerifications.userId, userId));
      const pending = found?.pending;
      if (!pending || pending.email !== found.email) throw invalidCode();
      const ok = await tryOneTimeCode(pending, otp, now, limits, async (seen) => {
        // The code read must still be the stored one: a new code resets the count to 0.
        const [counted] = await db
          .update(emailVerifications)
          .set({ attempts: seen + 1 })
          .where(and(eq(emailVerifications.userId, userId), eq(emailVerifications.attempts, seen), eq(emailVerifications.otpHash, pending.otpHash)))
          .returning({ userId: emailVerifications.userId });
        return counted !== undefined;
      });
      if (!ok) throw invalidCode();
      await db.transaction(async (tx) => {
        const [gone] = await tx.delete(emailVerifications).where(eq(emailVerifications.userId, userId)).returning({ email: emailVerifications.email });
        if (!gone) throw invalidCode();
        await tx.update(users).set({ emailVerifiedAt: now, updatedAt: now }).where(eq(users.id, userId));
      });
    },
  };
}

export type EmailVerification = ReturnType<typeof createEmailVerification>;
