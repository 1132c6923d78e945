/**
 * Offline geocoding: the centroid of the address's US ZIP code, from the `zipcodes` package
 * (BSD licence; ~42,000 US ZIPs with latitude/longitude, shipped in the package, no network).
 * Precise to a neighbourhood, not a door: good enough to order a day's visits, and refined by
 * the patient's own GPS fixes when there are any (locations.ts).
 */
import { createRequire } from 'node:module';
import type { LatLng } from '@fieldchart/schema/routing';

interface ZipRecord {
  readonly zip: string;
  readonly latitude: number;
  readonly longitude: number;
  readonly country: string;
}

interface ZipcodesModule {
  lookup(zip: string | number): ZipRecord | undefined;
}

// A CommonJS package without types, and 85 MB of ZIP data once parsed: loaded on the first
// lookup (not by every process that builds the services), and only the one function is typed.
let zipcodes: ZipcodesModule | null = null;
const zipData = () => (zipcodes ??= createRequire(import.meta.url)('zipcodes') as ZipcodesModule);

/**
 * The ZIP of a US address: the last 5-digit group (optionally ZIP+4) — the last, because a
 * street number can have five digits too ("12345 Main St, Columbus, OH 43215").
 */
export function zipOf(address: string): string | null {
  const all = [...address.matchAll(/\b(\d{5})(?:-\d{4})?\b/g)];
  return all.length ? all[all.length - 1]![1]! : null;
}

export function zipCentroid(address: string): LatLng | null {
  const zip = zipOf(address);
  if (!zip) return null;
  const rec = zipData().lookup(zip);
  if (!rec || rec.country !== 'US' || !Number.isFinite(rec.latitude) || !Number.isFinite(rec.longitude)) return null;
  return { lat: rec.latitude, lng: rec.longitude };
}
