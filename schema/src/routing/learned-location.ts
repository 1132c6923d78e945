/**
 * A patient's location learned from where the clinician actually arrived: the median of the
 * most recent accurate `arrive` GPS fixes. The server (optimize) and the offline client
 * (planDay) apply the same rule.
 */
import type { LatLng } from './great-circle.ts';

/** Fixes less accurate than this (metres, the device's reported accuracy) teach nothing. */
export const DEFAULT_GPS_ACCURACY_METERS = 50;
/** How many of the most recent fixes count: their median shrugs off one bad fix. */
export const LEARNED_FIXES = 5;

export interface GpsFix {
  readonly lat: number;
  readonly lng: number;
  readonly accuracy: number | null;
  /** ISO 8601 or epoch milliseconds: only the order matters. */
  readonly at: string | number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

/** The learned point, or null when no fix is accurate enough (a fix without an accuracy is not trusted). */
export function learnedLocation(fixes: readonly GpsFix[], maxAccuracyMeters = DEFAULT_GPS_ACCURACY_METERS, count = LEARNED_FIXES): LatLng | null {
  const time = (f: GpsFix) => (typeof f.at === 'number' ? f.at : Date.parse(f.at));
  const good = fixes
    .filter((f) => f.accuracy !== null && f.accuracy <= maxAccuracyMeters && Number.isFinite(f.lat) && Number.isFinite(f.lng))
    .sort((a, b) => time(b) - time(a))
    .slice(0, count);
  if (good.length === 0) return null;
  return { lat: median(good.map((f) => f.lat)), lng: median(good.map((f) => f.lng)) };
}

/** Addresses compared the same way everywhere: case, spacing and trailing punctuation do not matter. */
export const normaliseAddress = (a: string) => a.trim().toLowerCase().replace(/\s+/g, ' ').replace(/[.,;\s]+$/, '');
