/**
 * Address → coordinates. A Nominatim-compatible service when GEOCODER_NOMINATIM_URL is set
 * (`/search?format=jsonv2&q=…`, with a User-Agent as its usage policy asks, one request per
 * GEOCODER_MIN_INTERVAL_MS), answers cached in `geocode_cache`; otherwise, or when the service
 * fails or knows nothing, the offline ZIP centroid. Addresses never reach a log or an error.
 */
import { eq } from 'drizzle-orm';
import { z } from 'zod';
import { geocodeCache } from '@fieldchart/schema/db';
import { normaliseAddress, type LatLng } from '@fieldchart/schema/routing';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import { zipCentroid } from './zip-centroids.ts';

export type GeocodeSource = 'nominatim' | 'zip_centroid';

export interface GeocodeResult {
  readonly point: LatLng;
  readonly source: GeocodeSource;
}

export interface Geocoder {
  geocode(address: string): Promise<GeocodeResult | null>;
}

export interface NominatimOptions {
  readonly url: string;
  readonly userAgent: string;
  readonly minIntervalMs: number;
  readonly timeoutMs: number;
}

/** A "nothing found" answer is believed for a day, then asked again (the service's data improves). */
const NEGATIVE_TTL_MS = 24 * 3600 * 1000;

const nominatimAnswer = z.array(z.object({ lat: z.coerce.number(), lon: z.coerce.number() }).passthrough());


export function createGeocoder(deps: { db: Db; clock: Clock; phi: PhiCrypto; nominatim: NominatimOptions | null }): Geocoder {
  const { db, clock, phi, nominatim } = deps;
  // Requests are chained so that at most one is in flight and they are spaced by minIntervalMs.
  let queue: Promise<unknown> = Promise.resolve();
  let lastRequestAt = 0;

  async function askNominatim(opts: NominatimOptions, address: string): Promise<LatLng | null> {
    const turn = queue.then(async () => {
      const wait = lastRequestAt + opts.minIntervalMs - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      lastRequestAt = Date.now();
      const url = `${opts.url}/search?format=jsonv2&limit=1&countrycodes=us&q=${encodeURIComponent(address)}`;
      const res = await fetch(url, {
        headers: { 'user-agent': opts.userAgent, accept: 'application/json' },
        signal: AbortSignal.timeout(opts.timeoutMs),
      });
      if (!res.ok) throw new Error(`geocoder answered ${res.status}`);
      const parsed = nominatimAnswer.safeParse(await res.json());
      if (!parsed.success) throw new Error('geocoder answered an unexpected body');
      const first = parsed.data[0];
      if (!first || Math.abs(first.lat) > 90 || Math.abs(first.lon) > 180) return null;
      return { lat: first.lat, lng: first.lon };
    });
    queue = turn.catch(() => undefined);
    return turn;
  }

  async function cached(key: string): Promise<{ point: LatLng | null } | undefined> {
    const [row] = await db.select().from(geocodeCache).where(eq(geocodeCache.addressKey, key));
    if (!row) return undefined;
    if (row.pointEnc === null) {
      return clock.now().getTime() - row.createdAt.getTime() < NEGATIVE_TTL_MS ? { point: null } : undefined;
    }
    try {
      const point = JSON.parse(phi.open(row.pointEnc, 'geocode_cache', 'point_enc', key) ?? 'null') as LatLng | null;
      return point && Number.isFinite(point.lat) && Number.isFinite(point.lng) ? { point } : undefined;
    } catch {
      // Sealed under a key no longer in the ring: ask again.
      return undefined;
    }
  }

  /** `indexKeyId`: the index key `key` was made under (read with it, not after the geocoder's answer: a rotation may come between). */
  async function remember(key: string, indexKeyId: string, point: LatLng | null): Promise<void> {
    const pointEnc = point ? phi.seal(JSON.stringify({ lat: point.lat, lng: point.lng }), 'geocode_cache', 'point_enc', key) : null;
    const now = clock.now();
    await db
      .insert(geocodeCache)
      .values({ addressKey: key, source: 'nominatim', pointEnc, indexKeyId, createdAt: now })
      .onConflictDoUpdate({ target: geocodeCache.addressKey, set: { pointEnc, indexKeyId, createdAt: now } });
  }

  return {
    async geocode(address) {
      const normal = normaliseAddress(address);
      if (!normal) return null;
      if (nominatim) {
        const ring = phi.ring();
        const key = ring.lookupToken('geocode', normal);
        const hit = await cached(key);
        let point: LatLng | null | undefined = hit?.point;
        if (hit === undefined) {
          try {
            point = await askNominatim(nominatim, address);
            await remember(key, ring.indexKeyId, point);
          } catch {
            // The service is down or slow: the ZIP centroid below still places the visit.
            point = undefined;
          }
        }
        if (point) return { point, source: 'nominatim' };
      }
      const centroid = zipCentroid(address);
      return centroid ? { point: centroid, source: 'zip_centroid' } : null;
    },
  };
}
