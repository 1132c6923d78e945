/**
 * The one rule for mailed one-time codes (password reset, email verification, invitation
 * sign-up): a random code stored as argon2id, valid for OTP_TTL_SECONDS, burned after
 * OTP_MAX_ATTEMPTS tries. Each try is counted before the code is checked, by compare-and-set
 * on the attempt count the caller read, so parallel guesses cannot exceed the limit: of two
 * tries that read the same count, only one is counted and checked, the other fails.
 */
import { addSeconds } from '../../clock.ts';
import { hashSecret, verifySecret } from '../../security/passwords.ts';
import { newOtp } from '../../security/random-tokens.ts';

export interface OneTimeCodeLimits {
  readonly otpTtlSeconds: number;
  readonly otpMaxAttempts: number;
}

/** A fresh code to mail (`code`) and what is stored of it. */
export interface IssuedCode {
  readonly code: string;
  readonly otpHash: string;
  readonly expiresAt: Date;
  /** Minutes the code is valid, as the mail says it. */
  readonly validMinutes: number;
}

export async function issueOneTimeCode(limits: OneTimeCodeLimits, now: Date): Promise<IssuedCode> {
  const code = newOtp();
  return {
    code,
    otpHash: await hashSecret(code),
    expiresAt: addSeconds(now, limits.otpTtlSeconds),
    validMinutes: Math.round(limits.otpTtlSeconds / 60),
  };
}

/** A stored code as its table has it. */
export interface StoredCode {
  readonly otpHash: string | null;
  readonly expiresAt: Date | null;
  readonly attempts: number;
}

/**
 * Whether `otp` is the stored code: false for no code, an expired or burned one, a try that
 * lost the compare-and-set, or a wrong code. `countTry(seen)` sets the attempt count to
 * `seen + 1` only where it still is `seen` (and the code is still the one read) and answers
 * whether it did.
 */
export async function tryOneTimeCode(
  stored: StoredCode,
  otp: string,
  now: Date,
  limits: OneTimeCodeLimits,
  countTry: (seen: number) => Promise<boolean>,
): Promise<boolean> {
  if (!stored.otpHash || !stored.expiresAt || stored.expiresAt <= now || stored.attempts >= limits.otpMaxAttempts) return false;
  if (!(await countTry(stored.attempts))) return false;
  return verifySecret(stored.otpHash, otp);
}
