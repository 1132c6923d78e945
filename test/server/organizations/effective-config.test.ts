/**
 * Rules 1–7 of "Feature flags and terminology" as a table: every organization type, with and
 * without a back office, with no override, each flag overridden on and off, overrides cleared
 * with null, personal overrides solo and seated. Expected values are written out here from the
 * spec, not computed by the code under test.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FEATURE_KEYS, ORGANIZATION_TYPES, PERSONAL_FEATURE_KEYS, type FeatureKey } from '@fieldchart/schema/api';
import {
  applyOverridePatch,
  effectiveConfig,
  type OrganizationSettings,
} from '../../../server/src/services/organizations/effective-config.ts';
import { EXPECTED_SOLO_DEFAULTS } from './org-fixtures.ts';

type Flags = Record<FeatureKey, boolean>;

const SOLO: Flags = { ...EXPECTED_SOLO_DEFAULTS };

/** Rule 4, literally. */
const TYPE_ON: Record<string, FeatureKey[]> = {
  staffing_company: ['staffing_offers', 'earnings', 'coverage_areas', 'follow_ups', 'credential_sync', 'coverage_sync'],
  home_health_agency: ['follow_ups'],
  clinic: [],
  private_practice: [],
  hospital: [],
};

const SYNC: FeatureKey[] = ['credential_sync', 'coverage_sync'];
const TERMS = { patient: 'patient', visit: 'visit', note: 'visit note', organization: 'organization' };

/** The expected flags of a seat, before overrides: rule 4 then rule 5. */
function expectedDefaults(type: string, connected: boolean): Flags {
  const flags = { ...SOLO };
  for (const k of TYPE_ON[type] ?? []) flags[k] = true;
  if (!connected) for (const k of SYNC) flags[k] = false;
  return flags;
}

const org = (type: string, connected: boolean, featureOverrides: Record<string, unknown> = {}, terminologyOverrides: Record<string, unknown> = {}): OrganizationSettings => ({
  type: type as OrganizationSettings['type'],
  backOfficeConnected: connected,
  featureOverrides,
  terminologyOverrides,
});

interface Case {
  readonly name: string;
  readonly input: Parameters<typeof effectiveConfig>[0];
  readonly source: 'solo' | 'organization';
  readonly features: Flags;
  readonly terminology?: Record<string, string>;
}

function cases(): Case[] {
  const out: Case[] = [];

  // Rules 1 and 3: solo.
  out.push({ name: 'solo, no overrides', input: { organization: null, personalOverrides: {} }, source: 'solo', features: SOLO });
  for (const key of PERSONAL_FEATURE_KEYS) {
    for (const value of [true, false]) {
      out.push({
        name: `solo, personal ${key}=${value}`,
        input: { organization: null, personalOverrides: { [key]: value } },
        source: 'solo',
        features: { ...SOLO, [key]: value },
      });
    }
    out.push({ name: `solo, personal ${key}=null falls back`, input: { organization: null, personalOverrides: { [key]: null } }, source: 'solo', features: SOLO });
  }
  for (const key of FEATURE_KEYS.filter((k) => !(PERSONAL_FEATURE_KEYS as readonly string[]).includes(k))) {
    out.push({
      name: `solo, a stored personal ${key}=true is not a personal flag and is ignored`,
      input: { organization: null, personalOverrides: { [key]: true } },
      source: 'solo',
      features: SOLO,
    });
  }

  for (const type of ORGANIZATION_TYPES) {
    for (const connected of [false, true]) {
      const base = expectedDefaults(type, connected);
      const label = `${type}, back office ${connected ? 'connected' : 'not connected'}`;
      // Rules 2 and 4 (and 5).
      out.push({ name: `${label}, no overrides`, input: { organization: org(type, connected), personalOverrides: {} }, source: 'organization', features: base });
      // Rule 2: personal overrides ignored once seated.
      out.push({
        name: `${label}, personal overrides ignored`,
        input: { organization: org(type, connected), personalOverrides: Object.fromEntries(PERSONAL_FEATURE_KEYS.map((k) => [k, !SOLO[k]])) },
        source: 'organization',
        features: base,
      });
      for (const key of FEATURE_KEYS) {
        for (const value of [true, false]) {
          // Stored overrides win (rule 6), except that rule 5 forces the sync flags off.
          const forcedOff = SYNC.includes(key) && !connected;
          out.push({
            name: `${label}, override ${key}=${value}`,
            input: { organization: org(type, connected, { [key]: value }), personalOverrides: {} },
            source: 'organization',
            features: { ...base, [key]: forcedOff ? false : value },
          });
        }
        // Rule 7 on the read side: a null stored value is no override.
        out.push({
          name: `${label}, ${key}=null falls back to the default`,
          input: { organization: org(type, connected, { [key]: null }), personalOverrides: {} },
          source: 'organization',
          features: base,
        });
      }
    }
  }

  // Terminology: defaults, overrides, cleared, and solo never sees an organization's terms.
  out.push({
    name: 'organization terminology overrides',
    input: { organization: org('clinic', false, {}, { patient: 'client', note: 'progress note' }), personalOverrides: {} },
    source: 'organization',
    features: expectedDefaults('clinic', false),
    terminology: { ...TERMS, patient: 'client', note: 'progress note' },
  });
  out.push({
    name: 'terminology null falls back',
    input: { organization: org('hospital', false, {}, { visit: null }), personalOverrides: {} },
    source: 'organization',
    features: expectedDefaults('hospital', false),
    terminology: TERMS,
  });
  return out;
}

describe('effectiveConfig (rules 1–7)', () => {
  const all = cases();

  test('the table covers every type, back-office state and flag', () => {
    // 1 + 5×3 + 6 solo; per type and back-office state: 2 + 11×3.
    assert.equal(all.length, 1 + 15 + 6 + ORGANIZATION_TYPES.length * 2 * (2 + FEATURE_KEYS.length * 3) + 2);
  });

  for (const c of all) {
    test(c.name, () => {
      const got = effectiveConfig(c.input);
      assert.equal(got.source, c.source);
      assert.deepEqual(got.features, c.features);
      assert.deepEqual(Object.keys(got.features).sort(), [...FEATURE_KEYS].sort(), 'all 11 flags, nothing else');
      assert.deepEqual(got.terminology, c.terminology ?? TERMS);
    });
  }

  test('rule 4: clinic, private_practice and hospital equal the solo defaults', () => {
    for (const type of ['clinic', 'private_practice', 'hospital']) {
      assert.deepEqual(effectiveConfig({ organization: org(type, true), personalOverrides: {} }).features, SOLO);
    }
  });

  test('rule 6: changing the type changes the defaults; stored overrides still win', () => {
    const overrides = { follow_ups: false, earnings: true };
    const asClinic = effectiveConfig({ organization: org('clinic', true, overrides), personalOverrides: {} }).features;
    const asStaffing = effectiveConfig({ organization: org('staffing_company', true, overrides), personalOverrides: {} }).features;
    assert.equal(asClinic.staffing_offers, false);
    assert.equal(asStaffing.staffing_offers, true);
    assert.equal(asStaffing.credential_sync, true);
    assert.equal(asClinic.follow_ups, false);
    assert.equal(asStaffing.follow_ups, false, 'the stored override beats the new type default');
    assert.equal(asClinic.earnings, true);
    assert.equal(asStaffing.earnings, true);
  });

  test('rule 7: a null in a patch clears the stored override, so the flag falls back', () => {
    const stored = applyOverridePatch<boolean>({}, { follow_ups: false, billing_codes: true });
    assert.deepEqual(stored, { follow_ups: false, billing_codes: true });
    const home = (s: Record<string, unknown>) => effectiveConfig({ organization: org('home_health_agency', false, s), personalOverrides: {} }).features;
    assert.equal(home(stored).follow_ups, false);
    const cleared = applyOverridePatch<boolean>(stored, { follow_ups: null });
    assert.deepEqual(cleared, { billing_codes: true }, 'null removes the key; absent keys stay');
    assert.equal(home(cleared).follow_ups, true, 'back to the home_health_agency default');
    assert.deepEqual(stored, { follow_ups: false, billing_codes: true }, 'the patch does not mutate its input');
  });
});
