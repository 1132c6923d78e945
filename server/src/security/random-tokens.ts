import { createHash, randomBytes, randomInt } from 'node:crypto';

/** An opaque bearer secret with 256 random bits, URL-safe. */
export function newOpaqueToken(): string {
  return randomBytes(32).toString('base64url');
}

/** SHA-256 hex: enough for high-entropy secrets; never use it for passwords or OTPs. */
export function sha256(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/** A uniformly random 6-digit code, leading zeros kept. */
export function newOtp(): string {
  return String(randomInt(0, 1_000_000)).padStart(6, '0');
}
