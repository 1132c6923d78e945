import {
  FEATURE_KEYS,
  PERSONAL_FEATURE_KEYS,
  TERMINOLOGY_KEYS,
  type EffectiveConfigRecord,
  type FeatureFlags,
  type FeatureKey,
  type OrganizationTypeName,
  type Terminology,
} from '@fieldchart/schema/api';
import type { OrganizationRow } from './records.ts';

/**
 * The effective features and terminology of a clinician (spec: "Feature flags (11 booleans)
 * and terminology", rules 1–7), as one pure function of what is stored. Nothing here reads
 * the database or the clock, so the table-driven test covers every case.
 *
 * Solo defaults (rule 3 fixes billing_codes and icd10_suggestions; rule 8 leaves the other
 * nine to us):
 * - staffing_offers, earnings, coverage_areas, follow_ups, credential_sync, coverage_sync:
 *   false. Rule 4 says staffing_company and home_health_agency "turn them on", so they are
 *   off for everyone else; the two sync flags also need a back office (rule 5), which a solo
 *   clinician never has.
 * - ai_conversation, ai_voice: true. AI documentation from the visit conversation and from
 *   dictation is what the app is for; a clinician who does not want it turns it off.
 * - copy_last_visit: false. Pre-filling a note from the previous visit produces cloned
 *   documentation, a known audit risk for home-health notes; clinicians opt in.
 */
export const SOLO_DEFAULTS: FeatureFlags = Object.freeze({
  billing_codes: false,
  icd10_suggestions: false,
  staffing_offers: false,
  earnings: false,
  coverage_areas: false,
  follow_ups: false,
  ai_conversation: true,
  ai_voice: true,
  copy_last_visit: false,
  credential_sync: false,
  coverage_sync: false,
});

/** Rule 4: what each organization type turns on over the solo defaults. */
export const TYPE_TURNS_ON: Readonly<Record<OrganizationTypeName, readonly FeatureKey[]>> = Object.freeze({
  staffing_company: ['staffing_offers', 'earnings', 'coverage_areas', 'follow_ups', 'credential_sync', 'coverage_sync'],
  home_health_agency: ['follow_ups'],
  clinic: [],
  private_practice: [],
  hospital: [],
});

/** Rule 5: flags that stay false until the organization's back office is connected. */
export const BACK_OFFICE_FLAGS: readonly FeatureKey[] = ['credential_sync', 'coverage_sync'];

/** Default display strings; the same for every organization type. */
export const DEFAULT_TERMINOLOGY: Terminology = Object.freeze({
  patient: 'patient',
  visit: 'visit',
  note: 'visit note',
  organization: 'organization',
});

/** What is stored for the organization a clinician sits in. */
export interface OrganizationSettings {
  readonly type: OrganizationTypeName;
  readonly backOfficeConnected: boolean;
  readonly featureOverrides: Readonly<Record<string, unknown>>;
  readonly terminologyOverrides: Readonly<Record<string, unknown>>;
}

/** The stored organization row as effectiveConfig reads it. */
export function organizationSettingsOf(
  row: Pick<OrganizationRow, 'type' | 'backOfficeConnected' | 'featureOverrides' | 'terminologyOverrides'>,
): OrganizationSettings {
  return {
    type: row.type as OrganizationTypeName,
    backOfficeConnected: row.backOfficeConnected,
    featureOverrides: row.featureOverrides,
    terminologyOverrides: row.terminologyOverrides,
  };
}

export interface ConfigInputs {
  /** The organization of the caller's seat; null for a solo clinician. */
  readonly organization: OrganizationSettings | null;
  /** users.feature_overrides. */
  readonly personalOverrides: Readonly<Record<string, unknown>>;
}

export function typeDefaults(type: OrganizationTypeName): FeatureFlags {
  const flags = { ...SOLO_DEFAULTS };
  for (const key of TYPE_TURNS_ON[type]) flags[key] = true;
  return flags;
}

/**
 * Rules 1–7. A stored value that is not a boolean (a null left by an old client, a key the
 * API would refuse) counts as "no override", which is rule 7 seen from the read side.
 */
export function effectiveConfig(input: ConfigInputs): EffectiveConfigRecord {
  const org = input.organization;
  if (!org) {
    // Rule 1 (+3): solo defaults overlaid with the personal overrides, for the personal keys only.
    // The back-office flags are not personal keys, so they keep their solo default, false (rule 5).
    const features = { ...SOLO_DEFAULTS };
    for (const key of PERSONAL_FEATURE_KEYS) {
      const v = input.personalOverrides[key];
      if (typeof v === 'boolean') features[key] = v;
    }
    return { source: 'solo', features, terminology: { ...DEFAULT_TERMINOLOGY } };
  }
  // Rules 2, 4, 6: type defaults (recomputed from the current type) overlaid with the stored
  // organization overrides; personal overrides play no part once seated.
  const features = typeDefaults(org.type);
  for (const key of FEATURE_KEYS) {
    const v = org.featureOverrides[key];
    if (typeof v === 'boolean') features[key] = v;
  }
  // Rule 5 beats everything, stored overrides included.
  if (!org.backOfficeConnected) for (const key of BACK_OFFICE_FLAGS) features[key] = false;
  const terms = { ...DEFAULT_TERMINOLOGY };
  for (const key of TERMINOLOGY_KEYS) {
    const v = org.terminologyOverrides[key];
    if (typeof v === 'string' && v.trim() !== '') terms[key] = v;
  }
  return { source: 'organization', features, terminology: terms };
}

/**
 * Applies a PUT patch to stored overrides (rule 7): a value sets the override, null removes
 * it, an absent key leaves it alone. Pure: answers a new object.
 */
export function applyOverridePatch<V>(
  stored: Readonly<Record<string, unknown>>,
  patch: Readonly<Partial<Record<string, V | null>>> | undefined,
): Record<string, V> {
  const next: Record<string, unknown> = { ...stored };
  for (const [key, value] of Object.entries(patch ?? {})) {
    if (value === null) delete next[key];
    else if (value !== undefined) next[key] = value;
  }
  return next as Record<string, V>;
}
