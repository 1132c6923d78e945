import * as z from 'zod';
import { email, isoDateTime, name, optionalText, otp, password, safeString, text } from './common.ts';

export const SUBSCRIPTION_STATUSES = ['trial', 'active', 'expired', 'org_managed'] as const;
export const subscriptionStatus = z.enum(SUBSCRIPTION_STATUSES);

/** Discipline codes offered at onboarding (GET /therapist-discipline). */
export const DISCIPLINES = ['PT', 'PTA', 'OT', 'COTA', 'SLP', 'SLPA', 'RN', 'LPN', 'MSW', 'HHA'] as const;
export const discipline = z.enum(DISCIPLINES, { error: `must be one of ${DISCIPLINES.join(', ')}` });

export const loginData = z
  .object({
    uuid: z.string(),
    first_name: z.string(),
    last_name: z.string(),
    email: z.string(),
    subscription_status: subscriptionStatus,
  })
  .meta({ id: 'LoginData' });

export const userProfile = loginData
  .extend({
    phone: z.string().nullable(),
    address: z.string().nullable(),
    discipline: z.string().nullable(),
    license_number: z.string().nullable(),
    license_state: z.string().nullable(),
    needs_onboarding: z.boolean(),
    trial_ends_at: isoDateTime.nullable(),
    email_verified: z.boolean().describe('The owner proved they receive mail at this address; needed to see and accept in-app invitations'),
    has_password: z.boolean(),
    linked_providers: z.array(z.enum(['google', 'apple'])),
    created_at: isoDateTime,
  })
  .meta({ id: 'User' });
export type UserProfile = z.infer<typeof userProfile>;

const tokenPair = {
  token: z.string().describe('Access token (JWT), sent as `Authorization: Bearer …`'),
  refresh_token: z.string().describe('Opaque refresh token for POST /token/refresh'),
  expires_in: z.number().int().describe('Access token lifetime in seconds'),
};

export const signInBody = z.object({ email: text(254).min(1, 'is required'), password: safeString(1024).min(1, 'is required') });
export const signInResult = z.object({
  ...tokenPair,
  loginData,
  trial_ends_at: isoDateTime.nullable(),
  needs_onboarding: z.boolean(),
});

export const socialProvider = z.enum(['google', 'apple']);
export const socialBody = z.object({
  provider: socialProvider,
  id_token: safeString(8192).min(1, 'is required'),
  email,
  first_name: name(),
  last_name: name(),
});

export const registerBody = z
  .object({
    first_name: name(),
    last_name: name(),
    email,
    password,
    password_confirmation: safeString(1024),
  })
  .refine((b) => b.password === b.password_confirmation, {
    path: ['password_confirmation'],
    message: 'does not match password',
  });

export const registerResult = z.object({ ...tokenPair, user: userProfile, needs_onboarding: z.boolean() });

export const sendOtpBody = z.object({ email });
export const sendOtpResult = z.object({ token: z.string().describe('Reset-flow token for /forgot-password/verify-otp') });
export const verifyOtpBody = z.object({ token: safeString(200).min(1, 'is required'), otp });
export const verifyOtpResult = z.object({ reset_token: z.string() });
export const resetPasswordBody = z
  .object({ token: safeString(200).min(1, 'is required'), password, password_confirmation: safeString(1024) })
  .refine((b) => b.password === b.password_confirmation, {
    path: ['password_confirmation'],
    message: 'does not match password',
  });

/**
 * Any string that is not a current refresh token is a 401 (an access token sent by mistake, a
 * truncated or padded one), so the body checks only presence; the request's body limit bounds
 * it and the service refuses anything longer than a refresh token can be before hashing it.
 */
export const refreshBody = z.object({ refresh_token: z.string().min(1, 'is required') });
export const refreshResult = z.object(tokenPair);

export const changePasswordBody = z
  .object({
    current_password: safeString(1024).min(1, 'is required'),
    new_password: password,
    new_password_confirmation: safeString(1024),
  })
  .refine((b) => b.new_password === b.new_password_confirmation, {
    path: ['new_password_confirmation'],
    message: 'does not match new_password',
  });

export const deleteAccountBody = z.object({
  password: safeString(1024).min(1, 'is required').optional().describe('Required for accounts with a password'),
  provider: socialProvider.optional().describe('Accounts without a password (social sign-in only) confirm with a fresh ID token'),
  id_token: safeString(8192).min(1).optional(),
});

export const updateBasicInfoBody = z.object({
  first_name: name().optional(),
  last_name: name().optional(),
  email: email.optional(),
  phone: optionalText(40),
  address: optionalText(500),
});

export const completeOnboardingBody = z.object({
  discipline,
  license_number: text(64).optional(),
  license_state: text(2)
    .regex(/^[A-Za-z]{2}$/, 'must be a two-letter state code')
    .transform((v) => v.toUpperCase())
    .optional(),
  organization_uuid: z.uuid().optional(),
});

export const settingsList = z.record(z.string(), z.unknown()).meta({ id: 'Settings' });

export const verifyEmailBody = z.object({ otp });

