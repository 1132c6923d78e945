import * as z from 'zod';

/*
 * The edge's two rules, written once and used by every request schema in `schema/src/api`
 * (query strings, path parameters and bodies) and, through those schemas, by the sync
 * mutations:
 *
 * - Text: no NUL (PostgreSQL text cannot hold U+0000), well-formed UTF-16 (no lone surrogate,
 *   which PostgreSQL cannot encode as UTF-8) and a bounded length. A value that breaks them is a
 *   422 naming the field, never a database error.
 * - Dates and times: clinical dates and timestamps lie in 1900-01-01 … 2100-12-31
 *   (`CLINICAL_DATE_MIN` / `CLINICAL_DATE_MAX`); dates are YYYY-MM-DD calendar dates that
 *   exist; timestamps are ISO 8601 with a real offset (`Z` or ±hh:mm within ±14:00).
 */

/** First and last clinical date accepted anywhere at the edge (README: "Input rules"). */
export const CLINICAL_DATE_MIN = '1900-01-01';
export const CLINICAL_DATE_MAX = '2100-12-31';
export const CLINICAL_YEAR_MIN = 1900;
export const CLINICAL_YEAR_MAX = 2100;

const MIN_INSTANT = Date.parse(`${CLINICAL_DATE_MIN}T00:00:00Z`);
/** Exclusive: the instant after the last day ends in UTC. */
const END_INSTANT = Date.parse(`${CLINICAL_DATE_MAX}T00:00:00Z`) + 86_400_000;

// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when PostgreSQL can store `s` as text: no NUL and no lone surrogate. */
export function isStorableText(s: string): boolean {
  return !s.includes('\u0000') && !LONE_SURROGATE.test(s);
}

export const TEXT_MESSAGE = 'must not contain NUL characters or invalid Unicode';

/**
 * Every string the edge accepts: storable and at most `max` UTF-16 units. The storability
 * check aborts the chain so a bad value gets one clear message.
 */
export const safeString = (max: number) =>
  z.string().max(max, `must be at most ${max} characters`).refine(isStorableText, { message: TEXT_MESSAGE, abort: true });

/** `safeString` trimmed. */
export const text = (max: number) => safeString(max).trim();

/** Trimmed, non-empty, bounded: what every free-text name field accepts. */
export const name = (max = 100) => text(max).min(1, 'is required');

/** Optional free text that may be cleared with null. */
export const optionalText = (max: number) => text(max).nullable().optional();

export const email = safeString(320)
  .trim()
  .max(254)
  .pipe(z.email('must be a valid email address'))
  .transform((v) => v.toLowerCase());

/** Minimum 8 per spec; long passphrases accepted whole (argon2 does not truncate). */
export const password = safeString(1024).min(8, 'must be at least 8 characters');

export const otp = z.string().regex(/^\d{6}$/, 'must be 6 digits');

export const uuid = z.uuid();

/** The longest path parameter the server's router takes; a longer one is a 404 (names nothing). */
export const MAX_PATH_PARAM = 2048;

/**
 * A record id in a path. Not z.uuid() and no tighter bound: a malformed, overlong or NUL-laden
 * id names no record, so the service answers the same 404 as for an unknown or foreign one.
 */
export const pathId = z.string().max(MAX_PATH_PARAM).meta({ format: 'uuid' });

/** True for YYYY-MM-DD that exists (no February 30) within the clinical range. */
function isClinicalDate(s: string): boolean {
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(s) && s >= CLINICAL_DATE_MIN && s <= CLINICAL_DATE_MAX;
}

/** A calendar date, YYYY-MM-DD, that exists, from 1900-01-01 to 2100-12-31. */
export const isoDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date (YYYY-MM-DD)')
  .refine(isClinicalDate, `must be a real date from ${CLINICAL_DATE_MIN} to ${CLINICAL_DATE_MAX}`)
  .meta({ format: 'date' });

/** A year as four digits, 1900–2100 (e.g. filter_year). */
export const clinicalYear = z
  .string()
  .regex(/^\d{4}$/, 'must be YYYY')
  .refine((s) => Number(s) >= CLINICAL_YEAR_MIN && Number(s) <= CLINICAL_YEAR_MAX, `must be from ${CLINICAL_YEAR_MIN} to ${CLINICAL_YEAR_MAX}`);

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|([+-])(\d{2}):(\d{2}))$/;

/** A parsed timestamp's instant in ms, or null when it is not one the edge accepts. */
export function clinicalInstant(s: string): number | null {
  const m = TIMESTAMP.exec(s);
  if (!m) return null;
  const [, y, mo, d, h, mi, sec, zone, , oh, om] = m;
  // The wall-clock date must exist (Date.parse would roll February 30 over to March).
  const day = `${y}-${mo}-${d}`;
  const local = new Date(`${day}T00:00:00Z`);
  if (Number.isNaN(local.getTime()) || !local.toISOString().startsWith(day)) return null;
  if (Number(h) > 23 || Number(mi) > 59 || Number(sec ?? '0') > 59) return null;
  if (zone !== 'Z' && (Number(om) > 59 || Number(oh) * 60 + Number(om) > 14 * 60)) return null;
  const ms = Date.parse(s);
  if (Number.isNaN(ms) || ms < MIN_INSTANT || ms >= END_INSTANT) return null;
  return ms;
}

/**
 * A timestamp from a device: ISO 8601 with seconds optional and a real offset (`Z` or ±hh:mm
 * within ±14:00), at an instant from 1900-01-01T00:00Z to the end of 2100-12-31 (UTC).
 */
export const timestamp = z
  .string()
  .max(40, 'must be an ISO 8601 timestamp')
  .refine((s) => clinicalInstant(s) !== null, {
    message: `must be an ISO 8601 timestamp with an offset (Z or ±hh:mm up to ±14:00), from ${CLINICAL_DATE_MIN} to ${CLINICAL_DATE_MAX}`,
  })
  .meta({ format: 'date-time' });

/** A timestamp in a response (the server's own, always in range). */
export const isoDateTime = z.string().meta({ format: 'date-time' });

/** The largest page any listing serves. */
export const MAX_PER_PAGE = 100;

/**
 * A listing's `per_page`: a whole number from 1; a larger one than MAX_PER_PAGE (however
 * large) is served as MAX_PER_PAGE, which the answer's `meta.per_page` reports.
 */
export const perPage = (def: number) =>
  z.coerce
    .number()
    .min(1)
    .refine(Number.isInteger, 'must be a whole number')
    .transform((n) => Math.min(n, MAX_PER_PAGE))
    .default(def)
    .describe(`Page size, 1 or more; above ${MAX_PER_PAGE} is served as ${MAX_PER_PAGE}`);

/** A listing's `page`: a whole number from 1; past the last page the list is empty. */
export const pageNumber = z.coerce.number().min(1).refine(Number.isSafeInteger, 'must be a whole number').default(1);
