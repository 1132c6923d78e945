/**
 * Travel-time matrices, best source first:
 *  1. live traffic, when GOOGLE_DISTANCE_MATRIX_KEY is set: the Distance Matrix API
 *     (`/maps/api/distancematrix/json`, `departure_time` = the day's start, `duration_in_traffic`);
 *  2. an OSRM-compatible `table` service when ROUTING_OSRM_URL is set
 *     (`/table/v1/driving/{lon,lat;…}?annotations=duration,distance`);
 *  3. great-circle estimates (schema/src/routing/great-circle.ts), always available.
 * A source that fails (error status, timeout, an incomplete table) hands over to the next, and
 * the answer says which one answered (`routing_source`).
 */
import { z } from 'zod';
import { greatCircleMatrix, type LatLng, type TravelMatrix } from '@fieldchart/schema/routing';

export type RoutingSource = 'google_traffic' | 'osrm' | 'great_circle';

export interface SourcedMatrix extends TravelMatrix {
  readonly source: RoutingSource;
}

export interface TravelMatrices {
  /** The best source configured: an answer from another one means it failed. */
  readonly preferred: RoutingSource;
  /** `departAt`: when the day's driving starts (live traffic predicts for that moment). */
  matrix(points: readonly LatLng[], departAt: Date): Promise<SourcedMatrix>;
}

export interface TrafficOptions {
  readonly url: string;
  readonly apiKey: string;
  /** Origins × destinations per request (the API's limit is 100 elements). */
  readonly maxElements: number;
}

const METERS_PER_MILE = 1609.344;

const osrmTable = z.object({
  code: z.literal('Ok'),
  durations: z.array(z.array(z.number().nullable())),
  distances: z.array(z.array(z.number().nullable())),
});

/** The OSRM answer as minutes and miles; null when any leg is missing (unroutable point). */
export async function osrmMatrix(baseUrl: string, points: readonly LatLng[], timeoutMs: number): Promise<TravelMatrix | null> {
  const coords = points.map((p) => `${p.lng.toFixed(6)},${p.lat.toFixed(6)}`).join(';');
  const res = await fetch(`${baseUrl}/table/v1/driving/${coords}?annotations=duration,distance`, {
    headers: { accept: 'application/json' },
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!res.ok) return null;
  const parsed = osrmTable.safeParse(await res.json());
  if (!parsed.success) return null;
  const { durations, distances } = parsed.data;
  const n = points.length;
  if (durations.length !== n || distances.length !== n) return null;
  const minutes: number[][] = [];
  const miles: number[][] = [];
  for (let i = 0; i < n; i++) {
    const d = durations[i]!;
    const m = distances[i]!;
    if (d.length !== n || m.length !== n) return null;
    if (d.some((x) => x === null) || m.some((x) => x === null)) return null;
    minutes.push(d.map((s) => (s as number) / 60));
    miles.push(m.map((x) => (x as number) / METERS_PER_MILE));
  }
  return { minutes, miles };
}

const valueOf = z.object({ value: z.number() });
const trafficAnswer = z.object({
  status: z.string(),
  rows: z.array(
    z.object({
      elements: z.array(z.object({ status: z.string(), duration: valueOf.optional(), duration_in_traffic: valueOf.optional(), distance: valueOf.optional() })),
    }),
  ),
});

/**
 * Live-traffic minutes (`duration_in_traffic`, else `duration`) and miles from the Distance
 * Matrix API, in as many requests as the element limit needs (rows of origins against every
 * destination). `departure_time` may not be in the past: a past day is asked for now.
 */
export async function trafficMatrix(opts: TrafficOptions, points: readonly LatLng[], departAt: Date, timeoutMs: number): Promise<TravelMatrix | null> {
  const n = points.length;
  const perRequest = Math.max(1, Math.floor(opts.maxElements / n));
  const coords = (ps: readonly LatLng[]) => ps.map((p) => `${p.lat.toFixed(6)},${p.lng.toFixed(6)}`).join('|');
  const departure = Math.max(Math.ceil(Date.now() / 1000), Math.floor(departAt.getTime() / 1000));
  const minutes: number[][] = [];
  const miles: number[][] = [];
  for (let from = 0; from < n; from += perRequest) {
    const origins = points.slice(from, from + perRequest);
    const q = new URLSearchParams({
      origins: coords(origins),
      destinations: coords(points),
      departure_time: String(departure),
      traffic_model: 'best_guess',
      mode: 'driving',
      key: opts.apiKey,
    });
    const res = await fetch(`${opts.url}?${q.toString()}`, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return null;
    const parsed = trafficAnswer.safeParse(await res.json());
    if (!parsed.success || parsed.data.status !== 'OK' || parsed.data.rows.length !== origins.length) return null;
    for (const [r, row] of parsed.data.rows.entries()) {
      if (row.elements.length !== n) return null;
      const mins: number[] = [];
      const mi: number[] = [];
      for (const [c, e] of row.elements.entries()) {
        if (from + r === c) {
          mins.push(0);
          mi.push(0);
          continue;
        }
        const seconds = e.duration_in_traffic?.value ?? e.duration?.value;
        if (e.status !== 'OK' || seconds === undefined || e.distance === undefined) return null;
        mins.push(seconds / 60);
        mi.push(e.distance.value / METERS_PER_MILE);
      }
      minutes.push(mins);
      miles.push(mi);
    }
  }
  return { minutes, miles };
}

export function createTravelMatrices(opts: { traffic: TrafficOptions | null; osrmUrl: string | null; timeoutMs: number }): TravelMatrices {
  // Failures are not logged with their URLs: the traffic URL carries the API key.
  const attempt = async (fn: () => Promise<TravelMatrix | null>): Promise<TravelMatrix | null> => {
    try {
      return await fn();
    } catch {
      return null;
    }
  };
  return {
    preferred: opts.traffic ? 'google_traffic' : opts.osrmUrl ? 'osrm' : 'great_circle',
    async matrix(points, departAt) {
      if (opts.traffic) {
        const traffic = opts.traffic;
        const m = await attempt(() => trafficMatrix(traffic, points, departAt, opts.timeoutMs));
        if (m) return { ...m, source: 'google_traffic' };
      }
      if (opts.osrmUrl) {
        const url = opts.osrmUrl;
        const m = await attempt(() => osrmMatrix(url, points, opts.timeoutMs));
        if (m) return { ...m, source: 'osrm' };
      }
      return { ...greatCircleMatrix(points), source: 'great_circle' };
    },
  };
}
