/**
 * Where each visit of the day is. In order of trust:
 *  1. the patient's learned location: the median of the most recent `arrive` GPS fixes (at most
 *     LEARNED_FIXES) taken at this patient's visits at the same address, each with an accuracy
 *     of at most ROUTING_GPS_ACCURACY_METERS — where the clinician actually parked;
 *  2. the geocoder (Nominatim when configured, then the ZIP centroid) on the visit's address.
 * A visit with none of these is not geocodable.
 */
import { and, desc, eq, inArray, isNotNull, isNull, lte } from 'drizzle-orm';
import { timerEvents, visits } from '@fieldchart/schema/db';
import { learnedLocation, LEARNED_FIXES, normaliseAddress, type GpsFix, type LatLng } from '@fieldchart/schema/routing';
import type { Db } from '../../db/database.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import type { Geocoder, GeocodeSource } from './geocoder.ts';

export type LocationSource = 'gps' | GeocodeSource;

export interface Located {
  readonly point: LatLng;
  readonly source: LocationSource;
}

/** Learned location per "patientId\naddress" from accurate arrive fixes; read inside the caller's (audited) transaction. */
export async function learnedLocations(
  tx: Db,
  phi: PhiCrypto,
  ownerId: string,
  patientIds: readonly string[],
  maxAccuracyMeters: number,
): Promise<Map<string, LatLng>> {
  const out = new Map<string, LatLng>();
  if (patientIds.length === 0) return out;
  const rows = await tx
    .select({
      visitId: visits.id,
      patientId: visits.patientId,
      addressEnc: visits.addressEnc,
      lat: timerEvents.latitude,
      lng: timerEvents.longitude,
      accuracy: timerEvents.accuracy,
      at: timerEvents.eventTime,
    })
    .from(timerEvents)
    .innerJoin(visits, eq(visits.id, timerEvents.visitId))
    .where(
      and(
        eq(visits.ownerId, ownerId),
        inArray(visits.patientId, [...patientIds]),
        isNull(visits.deletedAt),
        isNull(timerEvents.deletedAt),
        eq(timerEvents.eventType, 'arrive'),
        isNotNull(timerEvents.latitude),
        isNotNull(timerEvents.longitude),
        lte(timerEvents.accuracy, maxAccuracyMeters),
      ),
    )
    .orderBy(desc(timerEvents.eventTime))
    // Enough for LEARNED_FIXES per patient of a full day, without reading a patient's whole history.
    .limit(LEARNED_FIXES * patientIds.length * 4);
  const fixes = new Map<string, GpsFix[]>();
  for (const r of rows) {
    const key = learnedKey(r.patientId!, phi.open(r.addressEnc, 'visits', 'address_enc', r.visitId) ?? '');
    const list = fixes.get(key) ?? [];
    list.push({ lat: r.lat!, lng: r.lng!, accuracy: r.accuracy, at: r.at.getTime() });
    fixes.set(key, list);
  }
  for (const [key, list] of fixes) {
    const point = learnedLocation(list, maxAccuracyMeters);
    if (point) out.set(key, point);
  }
  return out;
}

export const learnedKey = (patientId: string, address: string) => `${patientId}\n${normaliseAddress(address)}`;

/** Geocodes what the fixes did not place (outside any transaction: the geocoder may be a network call). */
export async function locate(
  stops: ReadonlyArray<{ patientId: string | null; address: string | null }>,
  learned: ReadonlyMap<string, LatLng>,
  geocoder: Geocoder,
): Promise<Array<Located | null>> {
  const out: Array<Located | null> = [];
  for (const s of stops) {
    const gps = s.patientId ? learned.get(learnedKey(s.patientId, s.address ?? '')) : undefined;
    if (gps) {
      out.push({ point: gps, source: 'gps' });
      continue;
    }
    const g = s.address ? await geocoder.geocode(s.address) : null;
    out.push(g ? { point: g.point, source: g.source } : null);
  }
  return out;
}
