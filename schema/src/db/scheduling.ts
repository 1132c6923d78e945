import { doublePrecision, integer, pgTable, text, uuid } from 'drizzle-orm/pg-core';
import { createdAt, updatedAt } from './columns.ts';
import { users } from './accounts.ts';

/**
 * A clinician's scheduling policy (CONTRACT.md "home base"): where the day starts and ends, and
 * the defaults the route plan uses. One row per clinician, created on the first PUT; reads
 * before that get the defaults (server/src/services/routing/policy.ts).
 */
export const schedulingPolicies = pgTable('scheduling_policies', {
  userId: uuid('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  /** The clinician's home or office address: encrypted like every address. */
  homeBaseAddressEnc: text('home_base_address_enc'),
  homeBaseLat: doublePrecision('home_base_lat'),
  homeBaseLng: doublePrecision('home_base_lng'),
  defaultVisitMinutes: integer('default_visit_minutes').notNull().default(45),
  bufferMinutes: integer('buffer_minutes').notNull().default(10),
  /** HH:MM wall clock in the clinician's time zone. */
  dayStart: text('day_start').notNull().default('08:00'),
  updatedAt: updatedAt(),
});

/**
 * Geocoder answers, so an address is looked up once. Addresses are PHI: the key is a keyed
 * HMAC of the normalised address (the PHI index key), never the address, and the point itself
 * is sealed with the PHI key ring under that key as its row id.
 */
export const geocodeCache = pgTable('geocode_cache', {
  addressKey: text('address_key').primaryKey(),
  /** Which geocoder answered ('nominatim'). */
  source: text('source').notNull(),
  /** `{"lat":…,"lng":…}` sealed; null: the geocoder found nothing (remembered, so a bad address is not asked again and again). */
  pointEnc: text('point_enc'),
  /**
   * The blind-index key whose lookup token `address_key` is (the ring's `indexKeyId`; null: the
   * first). An entry under a key that is no longer current can never be found again: key
   * rotation deletes it.
   */
  indexKeyId: text('index_key_id'),
  createdAt: createdAt(),
});
