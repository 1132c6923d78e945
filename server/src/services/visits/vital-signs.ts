/**
 * Vital signs as the apps in the field send them. The API never showed their inner shape, so
 * devices send their own: `bp: "120/80"`, `pulse`, `spo2: "97%"`, `temp: "37.2 C"`,
 * `weight: {value: 82, unit: "kg"}`… A note is never refused over its vital signs (a clinician
 * loses a visit's documentation over a field name otherwise). Instead:
 *
 * - known vitals under any common alias are normalised to the canonical names and units of
 *   `VitalSigns` (systolic_bp/diastolic_bp mmHg, heart_rate, respiratory_rate, temperature_f,
 *   oxygen_saturation %, pain_level 0–10, blood_glucose mg/dL, weight_lb);
 * - each known value outside its normal range is flagged `<name>_low` / `<name>_high`, and
 *   outside what a living adult can have `<name>_implausible` (kept: it is what was recorded,
 *   most likely a typo the clinician should see) — these go to `vital_flags`;
 * - members we do not know are kept as sent; a known alias whose value cannot be read, or that
 *   contradicts another alias, is kept as sent under `unreadable` — flagged for review
 *   (`<name>_unreadable`, `<name>_conflicting` in `review_flags`);
 * - the whole object is bounded (50 members, 16 KiB as JSON, nesting depth 3): what does not
 *   fit is dropped and the note gets the review flag `vital_signs_truncated`.
 *
 * Flags are names only (no values), so they sit in plaintext beside the encrypted vitals.
 * Pure: no database, no clock. Normalising a normalised object changes nothing.
 */

/** The canonical vitals, in the order flags are reported. */
export const VITAL_NAMES = [
  'systolic_bp',
  'diastolic_bp',
  'heart_rate',
  'respiratory_rate',
  'temperature_f',
  'oxygen_saturation',
  'pain_level',
  'blood_glucose',
  'weight_lb',
] as const;
export type VitalName = (typeof VITAL_NAMES)[number];

/** What is stored and answered: canonical numbers, `unreadable` raw values, unknown members as sent. */
export type VitalSigns = Partial<Record<VitalName, number>> & { unreadable?: Record<string, unknown> } & Record<string, unknown>;

export interface NormalizedVitals {
  /** null when nothing was sent (or only an empty object). */
  readonly vitals: VitalSigns | null;
  /** `<name>_low|_high|_implausible`: abnormal or impossible values. */
  readonly vitalFlags: string[];
  /** `<name>_unreadable|_conflicting`, `vital_signs_truncated`: the clinician should look. */
  readonly reviewFlags: string[];
}

export const VITAL_LIMITS = { maxMembers: 50, maxJsonBytes: 16 * 1024, maxDepth: 3 } as const;

interface Range {
  readonly low?: number;
  readonly high?: number;
  /** high is inclusive (≥) instead of strict (>). */
  readonly highInclusive?: boolean;
}

/** Adult home-health thresholds; documented in the README "Visits" section. */
export const VITAL_RANGES: Readonly<Record<VitalName, Range>> = {
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

/** Outside these a value cannot be a living adult's reading (flagged `_implausible`, kept). */
export const VITAL_BOUNDS: Readonly<Record<VitalName, readonly [number, number]>> = {
  systolic_bp: [40, 300],
  diastolic_bp: [20, 200],
  heart_rate: [20, 250],
  respiratory_rate: [4, 80],
  temperature_f: [85, 110],
  oxygen_saturation: [50, 100],
  pain_level: [0, 10],
  blood_glucose: [20, 800],
  weight_lb: [1, 1000],
};

/** Alias (lower case, separators as `_`) → canonical vital; `bp` aliases are handled apart. */
const ALIASES: Readonly<Record<string, VitalName>> = {
  systolic_bp: 'systolic_bp', systolic: 'systolic_bp', sbp: 'systolic_bp', bp_systolic: 'systolic_bp',
  diastolic_bp: 'diastolic_bp', diastolic: 'diastolic_bp', dbp: 'diastolic_bp', bp_diastolic: 'diastolic_bp',
  heart_rate: 'heart_rate', hr: 'heart_rate', pulse: 'heart_rate', pulse_rate: 'heart_rate', heartrate: 'heart_rate',
  respiratory_rate: 'respiratory_rate', resp: 'respiratory_rate', rr: 'respiratory_rate', respirations: 'respiratory_rate', resp_rate: 'respiratory_rate',
  temperature_f: 'temperature_f', temperature: 'temperature_f', temp: 'temperature_f', temp_f: 'temperature_f',
  temperature_c: 'temperature_f', temp_c: 'temperature_f',
  oxygen_saturation: 'oxygen_saturation', spo2: 'oxygen_saturation', o2_sat: 'oxygen_saturation', o2sat: 'oxygen_saturation',
  o2: 'oxygen_saturation', sao2: 'oxygen_saturation', sp_o2: 'oxygen_saturation', o2_saturation: 'oxygen_saturation',
  pain_level: 'pain_level', pain: 'pain_level', pain_score: 'pain_level',
  blood_glucose: 'blood_glucose', glucose: 'blood_glucose', bg: 'blood_glucose', bgl: 'blood_glucose', blood_sugar: 'blood_glucose',
  weight_lb: 'weight_lb', weight: 'weight_lb', wt: 'weight_lb', weight_lbs: 'weight_lb', weight_kg: 'weight_lb',
};
const BP_ALIASES = new Set(['bp', 'blood_pressure']);

/** The unit a key itself implies (`temp_c`, `weight_kg`), when the value names none. */
const KEY_UNITS: Readonly<Record<string, string>> = {
  temperature_c: 'c',
  temp_c: 'c',
  // The canonical names carry their unit: a stored note sent back is never converted twice.
  temperature_f: 'f',
  temp_f: 'f',
  weight_kg: 'kg',
  weight_lb: 'lb',
  weight_lbs: 'lb',
};

const aliasKey = (key: string) => key.trim().toLowerCase().replace(/[\s\-.]+/g, '_');

/** A number and the unit written with it: 98.6, "98.6", "98.6 F", "37°C", "97%", "7/10", {value, unit}. */
function reading(value: unknown): { n: number; unit: string } | null {
  if (typeof value === 'number') return Number.isFinite(value) ? { n: value, unit: '' } : null;
  if (typeof value === 'string') {
    const m = /^\s*(-?\d+(?:[.,]\d+)?)\s*(?:°\s*)?([a-z%/0-9]*)\s*$/i.exec(value);
    if (!m) return null;
    const n = Number(m[1]?.replace(',', '.'));
    return Number.isFinite(n) ? { n, unit: (m[2] ?? '').toLowerCase() } : null;
  }
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const o = value as Record<string, unknown>;
    const inner = reading(o.value);
    if (!inner) return null;
    return { n: inner.n, unit: typeof o.unit === 'string' ? o.unit.trim().toLowerCase().replace(/^°\s*/, '') : inner.unit };
  }
  return null;
}

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;

/** The canonical value of one vital, or null when the reading or its unit cannot be understood. */
function canonical(name: VitalName, value: unknown, keyUnit: string): number | null {
  const r = reading(value);
  if (!r) return null;
  const n = inCanonicalUnit(name, r.n, r.unit || keyUnit);
  // A conversion can overflow (-1e307 °C is -Infinity °F, which JSON writes as null): such a
  // reading is unreadable, and kept as sent.
  return n !== null && Number.isFinite(n) ? n : null;
}

/** `n` written in `unit`, in the canonical unit of `name`; null for a unit it is never written in. */
function inCanonicalUnit(name: VitalName, n: number, unit: string): number | null {
  switch (name) {
    case 'temperature_f':
      if (unit === 'c' || unit === 'celsius') return round((n * 9) / 5 + 32, 1);
      if (unit === 'f' || unit === 'fahrenheit') return n;
      // No unit: a body temperature below 50 can only be Celsius.
      return unit === '' ? (n < 50 ? round((n * 9) / 5 + 32, 1) : n) : null;
    case 'weight_lb':
      if (unit === 'kg' || unit === 'kgs') return round(n * 2.20462, 1);
      return ['', 'lb', 'lbs', 'pound', 'pounds'].includes(unit) ? n : null;
    case 'blood_glucose':
      if (unit === 'mmol/l' || unit === 'mmol') return Math.round(n * 18.016);
      return ['', 'mg/dl', 'mg'].includes(unit) ? n : null;
    case 'oxygen_saturation':
      return ['', '%'].includes(unit) ? n : null;
    case 'pain_level':
      return ['', '/10'].includes(unit) ? n : null;
    case 'systolic_bp':
    case 'diastolic_bp':
      return ['', 'mmhg'].includes(unit) ? n : null;
    default:
      return ['', 'bpm', '/min', 'min'].includes(unit) ? n : null;
  }
}

/** `120/80`, `120/80 mmHg`, {systolic, diastolic}: both numbers, or null. */
function bloodPressure(value: unknown): { systolic: number; diastolic: number } | null {
  if (typeof value === 'string') {
    const m = /^\s*(\d{1,3}(?:\.\d+)?)\s*\/\s*(\d{1,3}(?:\.\d+)?)\s*(?:mm\s*hg)?\s*$/i.exec(value);
    return m ? { systolic: Number(m[1]), diastolic: Number(m[2]) } : null;
  }
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const o = value as Record<string, unknown>;
    const s = canonical('systolic_bp', o.systolic ?? o.sys ?? o.systolic_bp, '');
    const d = canonical('diastolic_bp', o.diastolic ?? o.dia ?? o.diastolic_bp, '');
    return s !== null && d !== null ? { systolic: s, diastolic: d } : null;
  }
  return null;
}

/** Nesting depth, counted no further than `limit + 1` (a hostile value may nest thousands deep). */
function depthOf(value: unknown, limit: number = VITAL_LIMITS.maxDepth): number {
  if (value === null || typeof value !== 'object') return 0;
  if (limit < 0) return 1;
  let deepest = 0;
  for (const v of Object.values(value as Record<string, unknown>)) {
    deepest = Math.max(deepest, depthOf(v, limit - 1));
    if (deepest > limit) break;
  }
  return 1 + deepest;
}

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');

/** Normalises whatever a device sent as `vital_signs` (never throws, never refuses). */
export function normalizeVitals(input: unknown): NormalizedVitals {
  if (input === undefined || input === null) return { vitals: null, vitalFlags: [], reviewFlags: [] };
  const review = new Set<string>();
  const known: Partial<Record<VitalName, number>> = {};
  // Maps, then Object.fromEntries: a member named `__proto__` or `toString` stays data.
  const unreadable = new Map<string, unknown>();
  const others: Array<[string, unknown]> = [];

  const put = (name: VitalName, n: number, key: string, raw: unknown) => {
    const had = known[name];
    if (had === undefined) known[name] = n;
    else if (had !== n) {
      unreadable.set(key, raw);
      review.add(`${name}_conflicting`);
    }
  };

  if (typeof input !== 'object' || Array.isArray(input)) {
    // A sentence or a list instead of an object: kept as sent for the clinician to read.
    unreadable.set('vital_signs', input);
    review.add('vital_signs_unreadable');
  } else {
    for (const [key, raw] of Object.entries(input as Record<string, unknown>)) {
      const k = aliasKey(key);
      if (key === 'unreadable') {
        // A normalised object sent back (copy of the last visit): its raw values stay raw.
        if (raw && typeof raw === 'object' && !Array.isArray(raw)) for (const [rk, rv] of Object.entries(raw)) unreadable.set(rk, rv);
        else unreadable.set(key, raw);
        continue;
      }
      if (BP_ALIASES.has(k)) {
        const bp = bloodPressure(raw);
        if (bp) {
          put('systolic_bp', bp.systolic, key, raw);
          put('diastolic_bp', bp.diastolic, key, raw);
        } else {
          unreadable.set(key, raw);
          review.add('blood_pressure_unreadable');
        }
        continue;
      }
      const name = Object.hasOwn(ALIASES, k) ? ALIASES[k] : undefined;
      if (!name) {
        others.push([key, raw]);
        continue;
      }
      const n = canonical(name, raw, KEY_UNITS[k] ?? '');
      if (n === null) {
        unreadable.set(key, raw);
        review.add(`${name}_unreadable`);
      } else put(name, n, key, raw);
    }
  }

  // Bounded: canonical values always fit; raw and unknown members are kept in the order sent
  // while the object stays within its limits.
  const members: Array<[string, unknown]> = VITAL_NAMES.filter((n) => known[n] !== undefined).map((n) => [n, known[n]]);
  const kept: Array<[string, unknown]> = [];
  let truncated = false;
  const build = (raw: Array<[string, unknown]>, rest: Array<[string, unknown]>): VitalSigns =>
    Object.fromEntries(raw.length > 0 ? [...members, ['unreadable', Object.fromEntries(raw)], ...rest] : [...members, ...rest]) as VitalSigns;
  const fits = (candidate: VitalSigns) =>
    Object.keys(candidate).length <= VITAL_LIMITS.maxMembers &&
    depthOf(candidate) <= VITAL_LIMITS.maxDepth &&
    jsonBytes(candidate) <= VITAL_LIMITS.maxJsonBytes;
  const raws: Array<[string, unknown]> = [];
  for (const entry of unreadable) {
    if (fits(build([...raws, entry], kept))) raws.push(entry);
    else truncated = true;
  }
  const taken = new Set(members.map(([k]) => k).concat(raws.length > 0 ? ['unreadable'] : []));
  for (const entry of others) {
    if (taken.has(entry[0])) continue;
    if (fits(build(raws, [...kept, entry]))) {
      kept.push(entry);
      taken.add(entry[0]);
    } else truncated = true;
  }
  if (truncated) review.add('vital_signs_truncated');
  const vitals = build(raws, kept);

  return {
    vitals: Object.keys(vitals).length > 0 ? vitals : null,
    vitalFlags: vitalFlags(known),
    reviewFlags: [...review].sort(),
  };
}

/** `<name>_low` / `<name>_high` / `<name>_implausible` for each known value, in a stable order. */
export function vitalFlags(v: Partial<Record<VitalName, number>>): string[] {
  const flags: string[] = [];
  for (const name of VITAL_NAMES) {
    const value = v[name];
    if (value === undefined) continue;
    const [min, max] = VITAL_BOUNDS[name];
    if (value < min || value > max) {
      flags.push(`${name}_implausible`);
      continue;
    }
    const range = VITAL_RANGES[name];
    if (range.low !== undefined && value < range.low) flags.push(`${name}_low`);
    if (range.high !== undefined && (range.highInclusive ? value >= range.high : value > range.high)) flags.push(`${name}_high`);
  }
  if (v.systolic_bp !== undefined && v.diastolic_bp !== undefined && v.diastolic_bp >= v.systolic_bp && !flags.includes('diastolic_bp_implausible')) {
    flags.push('diastolic_bp_implausible');
  }
  return flags;
}
