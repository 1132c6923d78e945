import * as z from 'zod';

/** Trimmed, non-empty, bounded: what every free-text name field accepts. */
export const name = (max = 100) => z.string().trim().min(1, 'is required').max(max);

export const email = z
  .string()
  .trim()
  .max(254)
  .pipe(z.email('must be a valid email address'))
  .transform((v) => v.toLowerCase());

/** Minimum 8 per spec; long passphrases accepted whole (argon2 does not truncate). */
export const password = z.string().min(8, 'must be at least 8 characters').max(1024, 'must be at most 1024 characters');

export const otp = z.string().regex(/^\d{6}$/, 'must be 6 digits');

export const uuid = z.uuid();

/** A calendar date, YYYY-MM-DD, that exists (no February 30). */
export const isoDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date (YYYY-MM-DD)')
  .refine((s) => {
    const d = new Date(`${s}T00:00:00Z`);
    return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(s);
  }, 'is not a real date');

export const isoDateTime = z.string().meta({ format: 'date-time' });
