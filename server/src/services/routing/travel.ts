/**
 * Travel-time matrices. An OSRM-compatible `table` service when ROUTING_OSRM_URL is set
 * (`/table/v1/driving/{lon,lat;…}?annotations=duration,distance`); when it is not, or fails,
 * great-circle estimates (schema/src/routing/great-circle.ts) — and the answer says which.
 *
 * A traffic-aware provider is an extension point, not built: it would implement TravelMatrices
 * and be chosen by configuration before OSRM (docs/routing.md).
 */
import { z } from 'zod';
import { greatCircleMatrix, type LatLng, type TravelMatrix } from '@fieldchart/schema/routing';

export type RoutingSource = 'osrm' | 'great_circle';

export interface SourcedMatrix extends TravelMatrix {
  readonly source: RoutingSource;
}

export interface TravelMatrices {
  /** An OSRM server is configured: a great-circle answer then means it failed. */
  readonly configured: boolean;
  matrix(points: readonly LatLng[]): Promise<SourcedMatrix>;
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

export function createTravelMatrices(opts: { osrmUrl: string | null; timeoutMs: number; onFallback?: (reason: string) => void }): TravelMatrices {
  return {
    configured: opts.osrmUrl !== null,
    async matrix(points) {
      if (opts.osrmUrl) {
        try {
          const m = await osrmMatrix(opts.osrmUrl, points, opts.timeoutMs);
          if (m) return { ...m, source: 'osrm' };
          opts.onFallback?.('osrm answered without a complete table');
        } catch (err) {
          opts.onFallback?.(`osrm unreachable: ${(err as Error).name}`);
        }
      }
      return { ...greatCircleMatrix(points), source: 'great_circle' };
    },
  };
}
