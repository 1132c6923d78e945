/**
 * Travel estimates from coordinates alone, for when no routing engine is configured and for
 * the offline device. Documented in docs/routing.md.
 */

export interface LatLng {
  readonly lat: number;
  readonly lng: number;
}

/** Mean Earth radius in miles (IUGG). */
const EARTH_RADIUS_MILES = 3958.7613;

/**
 * Road distance over straight-line distance. Studies of US road networks put the detour index
 * at 1.2–1.4 (lower on grids, higher in suburbs); 1.3 is the usual middle value.
 */
export const ROAD_CIRCUITY = 1.3;

/**
 * The speed model, by how far into a leg the car is: the first miles crawl through residential
 * streets and signals, longer legs reach arterials, long ones the highway. Cumulative bands keep
 * the time continuous and increasing with distance (a longer leg never takes less time).
 */
export const SPEED_BANDS: ReadonlyArray<{ readonly upToMiles: number; readonly mph: number }> = [
  { upToMiles: 3, mph: 20 },
  { upToMiles: 15, mph: 32 },
  { upToMiles: Infinity, mph: 50 },
];

/** Getting out, parking and walking to the door: added to every leg that moves at all. */
export const LEG_OVERHEAD_MINUTES = 2;

/** Straight-line (haversine) distance in miles. */
export function haversineMiles(a: LatLng, b: LatLng): number {
  const rad = Math.PI / 180;
  const dLat = (b.lat - a.lat) * rad;
  const dLng = (b.lng - a.lng) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(dLng / 2) ** 2;
  return 2 * EARTH_RADIUS_MILES * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** Minutes to drive `roadMiles` under SPEED_BANDS, plus the leg overhead; 0 for no distance. */
export function driveMinutesForRoadMiles(roadMiles: number): number {
  if (!(roadMiles > 0)) return 0;
  let minutes = LEG_OVERHEAD_MINUTES;
  let from = 0;
  for (const band of SPEED_BANDS) {
    const part = Math.min(roadMiles, band.upToMiles) - from;
    if (part <= 0) break;
    minutes += (part / band.mph) * 60;
    from = band.upToMiles;
  }
  return minutes;
}

/** One leg estimated from coordinates: road miles = haversine × ROAD_CIRCUITY. */
export function greatCircleLeg(a: LatLng, b: LatLng): { minutes: number; miles: number } {
  const miles = haversineMiles(a, b) * ROAD_CIRCUITY;
  return { miles, minutes: driveMinutesForRoadMiles(miles) };
}

/** A travel matrix between points, estimated from coordinates. */
export interface TravelMatrix {
  /** minutes[i][j]: drive minutes from point i to point j. */
  readonly minutes: number[][];
  /** miles[i][j]: road miles from point i to point j. */
  readonly miles: number[][];
}

export function greatCircleMatrix(points: readonly LatLng[]): TravelMatrix {
  const minutes = points.map(() => new Array<number>(points.length).fill(0));
  const miles = points.map(() => new Array<number>(points.length).fill(0));
  for (let i = 0; i < points.length; i++) {
    for (let j = 0; j < points.length; j++) {
      if (i === j) continue;
      const leg = greatCircleLeg(points[i]!, points[j]!);
      minutes[i]![j] = leg.minutes;
      miles[i]![j] = leg.miles;
    }
  }
  return { minutes, miles };
}
