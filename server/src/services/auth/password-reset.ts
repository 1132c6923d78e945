import { and, eq, isNull } from 'drizzle-orm';
import { passwordResets, users } from '@fieldchart/schema/db';
import type { Db } from '../../db/database.ts';
import { addSeconds, type Clock } from '../../clock.ts';
import type { Config } from '../../config.ts';
import { NotFound, TooMany, Unauthorized } from '../../errors.ts';
import { passwordResetCode } from '../../mail/templates.ts';
import { hashSecret } from '../../security/passwords.ts';
import { newOpaqueToken, sha256 } from '../../security/random-tokens.ts';
import type { MailOutbox } from '../mail/mail-outbox.ts';
import { issueOneTimeCode, tryOneTimeCode } from './one-time-code.ts';
import type { Throttle } from '../throttle.ts';
import { findUserByEmail } from '../users/user-profile.ts';
import type { Sessions } from './sessions.ts';

const HOUR = 3600;

/**
 * send-otp → verify-otp → reset. The code is random, stored as argon2id, valid for
 * OTP_TTL_SECONDS, single use and burned after OTP_MAX_ATTEMPTS wrong tries; sends are
 * limited per email and per client address; a reset revokes every session of the user.
 */
export function createPasswordReset(deps: {
  db: Db;
  clock: Clock;
  config: Config;
  throttle: Throttle;
  sessions: Sessions;
  mail: MailOutbox;
}) {
  const { db, clock, throttle } = deps;
  const limits = deps.config.limits;
  const invalidOtp = () => new Unauthorized('Invalid or expired code', 'invalid_otp');

  return {
    async sendOtp(email: string, clientAddress: string): Promise<{ token: string }> {
      const perAddress = await throttle.hit(db, ['otp-send-address', clientAddress], HOUR);
      if (perAddress.hits > limits.otpSendsPerAddressPerHour) {
        throw new TooMany('Too many reset requests; try again later', perAddress.retryAfterSeconds, 'too_many_attempts');
      }
      const perEmail = await throttle.hit(db, ['otp-send-email', email], HOUR);
      if (perEmail.hits > limits.otpSendsPerEmailPerHour) {
        throw new TooMany('Too many reset requests for this email; try again later', perEmail.retryAfterSeconds, 'too_many_attempts');
      }
      const u = await findUserByEmail(db, email);
      if (!u || u.disabledAt) throw new NotFound('No account with this email', 'email_not_found');
      const flowToken = newOpaqueToken();
      const now = clock.now();
      const issued = await issueOneTimeCode(limits, now);
      await db.transaction(async (tx) => {
        // A new code replaces any earlier one: only the newest mail works.
        await tx
          .update(passwordResets)
          .set({ consumedAt: now })
          .where(and(eq(passwordResets.userId, u.id), isNull(passwordResets.consumedAt)));
        await tx.insert(passwordResets).values({
          userId: u.id,
          flowTokenHash: sha256(flowToken),
          otpHash: issued.otpHash,
          otpExpiresAt: issued.expiresAt,
          createdAt: now,
        });
        await deps.mail.enqueue(
          tx,
          u.email,
          passwordResetCode({ firstName: u.firstName, code: issued.code, validMinutes: issued.validMinutes }),
        );
      });
      return { token: flowToken };
    },

    async verifyOtp(flowToken: string, otp: string): Promise<{ reset_token: string }> {
      const now = clock.now();
      const [flow] = await db.select().from(passwordResets).where(eq(passwordResets.flowTokenHash, sha256(flowToken)));
      if (!flow || flow.consumedAt || flow.verifiedAt) throw invalidOtp();
      const stored = { otpHash: flow.otpHash, expiresAt: flow.otpExpiresAt, attempts: flow.attempts };
      const ok = await tryOneTimeCode(stored, otp, now, limits, async (seen) => {
        const [counted] = await db
          .update(passwordResets)
          .set({ attempts: seen + 1 })
          .where(and(eq(passwordResets.id, flow.id), eq(passwordResets.attempts, seen)))
          .returning({ id: passwordResets.id });
        return counted !== undefined;
      });
      if (!ok) throw invalidOtp();
      const resetToken = newOpaqueToken();
      const [verified] = await db
        .update(passwordResets)
        .set({ verifiedAt: now, resetTokenHash: sha256(resetToken), resetExpiresAt: addSeconds(now, limits.resetTokenTtlSeconds) })
        .where(and(eq(passwordResets.id, flow.id), isNull(passwordResets.verifiedAt), isNull(passwordResets.consumedAt)))
        .returning({ id: passwordResets.id });
      if (!verified) throw invalidOtp();
      return { reset_token: resetToken };
    },

    async reset(resetToken: string, password: string): Promise<void> {
      const now = clock.now();
      const [found] = await db
        .select({ flow: passwordResets, disabledAt: users.disabledAt })
        .from(passwordResets)
        .innerJoin(users, eq(users.id, passwordResets.userId))
        .where(eq(passwordResets.resetTokenHash, sha256(resetToken)));
      const flow = found?.flow;
      // A disabled account cannot be taken back through a reset started before it was disabled.
      if (!flow || found.disabledAt || flow.consumedAt || !flow.resetExpiresAt || flow.resetExpiresAt <= now) {
        throw new Unauthorized('Invalid or expired reset token', 'invalid_reset_token');
      }
      const passwordHash = await hashSecret(password);
      await db.transaction(async (tx) => {
        const [consumed] = await tx
          .update(passwordResets)
          .set({ consumedAt: now })
          .where(and(eq(passwordResets.id, flow.id), isNull(passwordResets.consumedAt)))
          .returning({ id: passwordResets.id });
        if (!consumed) throw new Unauthorized('Invalid or expired reset token', 'invalid_reset_token');
        await tx.update(users).set({ passwordHash, passwordChangedAt: now, updatedAt: now }).where(eq(users.id, flow.userId));
        await deps.sessions.revokeAll(tx, flow.userId, 'password_reset');
      });
    },
  };
}

export type PasswordReset = ReturnType<typeof createPasswordReset>;
