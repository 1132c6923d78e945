import * as z from 'zod';
import { email, isoDateTime, name, optionalText, otp, password, safeString, text } from './common.ts';

/** Organization types (spec: Organization). The database check constraint lists the same five. */
export const ORGANIZATION_TYPES = ['staffing_company', 'home_health_agency', 'clinic', 'private_practice', 'hospital'] as const;
export type OrganizationTypeName = (typeof ORGANIZATION_TYPES)[number];
export const organizationType = z.enum(ORGANIZATION_TYPES, { error: `must be one of ${ORGANIZATION_TYPES.join(', ')}` });

export const MEMBER_ROLES = ['member', 'admin'] as const;
export const memberRole = z.enum(MEMBER_ROLES, { error: 'must be member or admin' });

/** The 11 feature flags (spec: Feature flags and terminology). */
export const FEATURE_KEYS = [
  'billing_codes',
  'icd10_suggestions',
  'staffing_offers',
  'earnings',
  'coverage_areas',
  'follow_ups',
  'ai_conversation',
  'ai_voice',
  'copy_last_visit',
  'credential_sync',
  'coverage_sync',
] as const;
export type FeatureKey = (typeof FEATURE_KEYS)[number];

/** The flags a solo clinician may set through PUT /my-settings/features. */
export const PERSONAL_FEATURE_KEYS = ['billing_codes', 'icd10_suggestions', 'ai_conversation', 'ai_voice', 'copy_last_visit'] as const;
export type PersonalFeatureKey = (typeof PERSONAL_FEATURE_KEYS)[number];

export const TERMINOLOGY_KEYS = ['patient', 'visit', 'note', 'organization'] as const;
export type TerminologyKey = (typeof TERMINOLOGY_KEYS)[number];

export const ORGANIZATION_STATUSES = ['requested', 'unclaimed', 'active'] as const;
export const INVITATION_STATUSES = ['pending', 'accepted', 'declined', 'revoked', 'expired'] as const;
export const JOIN_REQUEST_STATUSES = ['pending', 'approved', 'rejected'] as const;

// ---- records ----------------------------------------------------------------------------

export const featureFlags = z
  .object(Object.fromEntries(FEATURE_KEYS.map((k) => [k, z.boolean()])) as Record<FeatureKey, z.ZodBoolean>)
  .meta({ id: 'FeatureFlags', description: 'All 11 flags, resolved' });
export type FeatureFlags = z.infer<typeof featureFlags>;

export const terminology = z
  .object(Object.fromEntries(TERMINOLOGY_KEYS.map((k) => [k, z.string()])) as Record<TerminologyKey, z.ZodString>)
  .meta({ id: 'Terminology', description: 'Term key → display string, resolved' });
export type Terminology = z.infer<typeof terminology>;

export const effectiveConfig = z
  .object({
    source: z.enum(['solo', 'organization']),
    features: featureFlags,
    terminology,
  })
  .meta({ id: 'EffectiveConfig' });
export type EffectiveConfigRecord = z.infer<typeof effectiveConfig>;

export const organization = z
  .object({
    uuid: z.string(),
    name: z.string(),
    email: z.string().nullable(),
    phone: z.string().nullable(),
    address: z.string().nullable(),
    type: organizationType,
    member_count: z.number().int(),
    listed: z.boolean(),
    status: z.enum(ORGANIZATION_STATUSES),
    role: memberRole.nullable().describe("The caller's role in this organization; null when the caller has no seat in it"),
    created_at: isoDateTime,
  })
  .meta({ id: 'Organization' });
export type OrganizationRecord = z.infer<typeof organization>;

/** GET/PUT /my-organization: the caller's organization with its effective configuration. */
export const myOrganization = organization
  .extend({
    back_office_connected: z.boolean(),
    features: featureFlags,
    terminology,
  })
  .meta({ id: 'MyOrganization' });
export type MyOrganizationRecord = z.infer<typeof myOrganization>;

const personRef = z.object({ uuid: z.string(), first_name: z.string(), last_name: z.string(), email: z.string() });

export const joinRequest = z
  .object({
    uuid: z.string(),
    status: z.enum(JOIN_REQUEST_STATUSES),
    organization_uuid: z.string(),
    organization_name: z.string(),
    user: personRef,
    created_at: isoDateTime,
    decided_at: isoDateTime.nullable(),
  })
  .meta({ id: 'JoinRequest' });
export type JoinRequestRecord = z.infer<typeof joinRequest>;

export const invitation = z
  .object({
    uuid: z.string(),
    status: z.enum(INVITATION_STATUSES).describe('A pending invitation past expires_at reads as expired'),
    email: z.string(),
    role: memberRole,
    first_name: z.string().nullable(),
    last_name: z.string().nullable(),
    organization_uuid: z.string(),
    organization_name: z.string(),
    invited_by_name: z.string().nullable(),
    created_at: isoDateTime,
    expires_at: isoDateTime,
    responded_at: isoDateTime.nullable(),
  })
  .meta({ id: 'Invitation' });
export type InvitationRecord = z.infer<typeof invitation>;

// ---- request bodies ---------------------------------------------------------------------

export const organizationSearchQuery = z.object({
  search: text(200).optional().describe('Case-insensitive match anywhere in the name'),
});

export const organizationRequestBody = z.object({
  name: name(200),
  type: organizationType,
  email: email.optional(),
});

export const updateOrganizationBody = z.object({
  name: name(200).optional(),
  email: email.nullable().optional(),
  phone: optionalText(40),
  address: optionalText(500),
  type: organizationType.optional(),
});

/**
 * A map whose keys must come from `keys` and whose values pass `value`. Written as a
 * record plus one refinement (not a strict object) so that every bad key and every bad value
 * is reported at once, each under its own path (`features.foo`), which puts the key's name
 * in the error message.
 */
function keyedMap<K extends string, V>(opts: {
  keys: readonly K[];
  /** Checks a value and gives what is kept (e.g. trimmed); a failure reports `valueMessage`. */
  value: z.ZodType<V>;
  valueMessage: string;
  keyMessage: string;
  jsonValue: Record<string, unknown>;
  description: string;
}) {
  return z
    .record(safeString(100), z.unknown())
    .superRefine((map, ctx) => {
      for (const [k, v] of Object.entries(map)) {
        if (!(opts.keys as readonly string[]).includes(k)) ctx.addIssue({ code: 'custom', path: [k], message: opts.keyMessage });
        else if (!opts.value.safeParse(v).success) ctx.addIssue({ code: 'custom', path: [k], message: opts.valueMessage });
      }
    })
    .transform((map) => Object.fromEntries(Object.entries(map).map(([k, v]) => [k, opts.value.parse(v)])) as Partial<Record<K, V>>)
    .meta({
      description: opts.description,
      properties: Object.fromEntries(opts.keys.map((k) => [k, opts.jsonValue])),
      additionalProperties: false,
    });
}

const featurePatch = (keys: readonly FeatureKey[], keyMessage: string) =>
  keyedMap<FeatureKey, boolean | null>({
    keys,
    value: z.boolean().nullable(),
    valueMessage: 'must be true, false or null',
    keyMessage,
    jsonValue: { type: ['boolean', 'null'] },
    description: 'Feature key → boolean; null clears the stored override so the flag falls back to its default',
  });

export const organizationConfigBody = z.object({
  features: featurePatch(FEATURE_KEYS, `is not a feature key (known: ${FEATURE_KEYS.join(', ')})`).optional(),
  terminology: keyedMap<TerminologyKey, string | null>({
    keys: TERMINOLOGY_KEYS,
    value: text(60).min(1).nullable(),
    valueMessage: 'must be a display string of 1 to 60 characters, or null',
    keyMessage: `is not a terminology key (known: ${TERMINOLOGY_KEYS.join(', ')})`,
    jsonValue: { type: ['string', 'null'], minLength: 1, maxLength: 60 },
    description: 'Term key → display string; null clears the stored override',
  }).optional(),
});
export type OrganizationConfigBody = z.infer<typeof organizationConfigBody>;

export const personalFeaturesBody = z.object({
  features: featurePatch(
    PERSONAL_FEATURE_KEYS,
    `cannot be set personally (only ${PERSONAL_FEATURE_KEYS.join(', ')}; the rest are controlled by the organization)`,
  ),
});
export type PersonalFeaturesBody = z.infer<typeof personalFeaturesBody>;

export const inviteMemberBody = z.object({
  email,
  role: memberRole.default('member'),
  first_name: name().optional(),
  last_name: name().optional(),
});

export const inviteOrganizationBody = z.object({
  organization_name: name(200),
  contact_email: email,
  organization_type: organizationType.optional(),
  contact_name: name().optional(),
  message: text(2000).optional(),
});

export const claimPreview = z
  .object({ organization_name: z.string(), inviter_first_name: z.string(), expired: z.boolean() })
  .meta({ id: 'ClaimPreview' });

export const claimBody = z.object({ token: text(200).min(1, 'is required') });

// ---- invitation-based account creation --------------------------------------------------

const invitationToken = text(200).min(1, 'is required').describe('The invitation token from the emailed link');

export const acceptInvitationBody = z.object({ token: invitationToken });
export const acceptInvitationResult = z.object({ email: z.string(), organization_name: z.string() });

export const inviteOtpVerifyBody = z.object({ token: invitationToken, otp });
export const inviteOtpVerifyResult = z.object({
  id: z.string().describe('Verification id that /set-new-password takes; valid for a limited time'),
});

export const setNewPasswordBody = z
  .object({
    token: invitationToken,
    id: text(200).min(1, 'is required'),
    password,
    password_confirmation: safeString(1024),
    first_name: name().optional().describe('Defaults to the name the admin gave in the invitation'),
    last_name: name().optional(),
  })
  .refine((b) => b.password === b.password_confirmation, {
    path: ['password_confirmation'],
    message: 'does not match password',
  });
