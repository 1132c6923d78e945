/**
 * Vital-sign checks beyond the schema's hard bounds (schema/src/api/patients.ts `vitalSigns`,
 * values outside them are 422): combinations that cannot be, and plausible-but-abnormal
 * values that are stored and flagged, never rejected. Flags are names only (no values), so
 * they can sit in plaintext beside the encrypted vitals.
 */
import type * as z from 'zod';
import type { vitalSigns } from '@fieldchart/schema/api';

export type VitalSigns = z.infer<typeof vitalSigns>;

interface Range {
  readonly low?: number;
  readonly high?: number;
  /** high is inclusive (≥) instead of strict (>). */
  readonly highInclusive?: boolean;
}

/** Adult home-health thresholds; documented in the README "Visits" section. */
export const VITAL_RANGES: Readonly<Record<keyof VitalSigns, Range>> = {
  systolic_bp: { low: 90, high: 160, highInclusive: true },
  diastolic_bp: { low: 60, high: 100, highInclusive: true },
  heart_rate: { low: 50, high: 120 },
  respiratory_rate: { low: 12, high: 24 },
  temperature_f: { low: 95, high: 100.4, highInclusive: true },
  oxygen_saturation: { low: 90 },
  pain_level: { high: 7, highInclusive: true },
  blood_glucose: { low: 70, high: 250 },
  weight_lb: {},
};

/** A reason the combination is impossible, keyed by field, or null. */
export function impossibleVitals(v: VitalSigns): Record<string, string[]> | null {
  if (v.systolic_bp !== undefined && v.diastolic_bp !== undefined && v.diastolic_bp >= v.systolic_bp) {
    return { 'vital_signs.diastolic_bp': ['must be lower than systolic_bp'] };
  }
  return null;
}

/** `<name>_low` / `<name>_high` for each value outside its normal range, in a stable order. */
export function vitalFlags(v: VitalSigns): string[] {
  const flags: string[] = [];
  for (const [name, range] of Object.entries(VITAL_RANGES) as Array<[keyof VitalSigns, Range]>) {
    const value = v[name];
    if (value === undefined) continue;
    if (range.low !== undefined && value < range.low) flags.push(`${name}_low`);
    if (range.high !== undefined && (range.highInclusive ? value >= range.high : value > range.high)) flags.push(`${name}_high`);
  }
  return flags;
}
