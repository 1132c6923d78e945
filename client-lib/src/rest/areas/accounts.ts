/**
 * Accounts: sign-in and registration, tokens, password reset, the profile, email
 * verification and the clinician's own settings. These methods sit at the top level of the
 * client (`client.signIn`), the email and settings ones in groups (`client.mySettings.get`).
 */
import type * as z from 'zod';
import type {
  changePasswordBody,
  clinicianSettings,
  clinicianSettingsBody,
  completeOnboardingBody,
  deleteAccountBody,
  personalFeaturesBody,
  refreshBody,
  refreshResult,
  registerBody,
  registerResult,
  resetPasswordBody,
  sendOtpBody,
  sendOtpResult,
  settingsList,
  signInBody,
  signInResult,
  socialBody,
  updateBasicInfoBody,
  userProfile,
  verifyEmailBody,
  verifyOtpBody,
  verifyOtpResult,
} from '@fieldchart/schema/api';
import { ENDPOINTS as E } from '../endpoints.ts';
import type { Invoker } from '../invoke.ts';
import type { AuthWriteOptions, MessageResult, ReadOptions, WriteOptions } from '../options.ts';
import type { EffectiveConfig } from './organizations.ts';

/** Body of `POST /sign-in`. */
export type SignInBody = z.input<typeof signInBody>;
/** `data` of a successful sign-in (password or social). */
export type SignInResult = z.output<typeof signInResult>;
/** Body of `POST /sign-in/social` and `POST /register/social`. */
export type SocialBody = z.input<typeof socialBody>;
/** Body of `POST /register`. */
export type RegisterBody = z.input<typeof registerBody>;
/** `data` of a successful registration (password or social). */
export type RegisterResult = z.output<typeof registerResult>;
/** Body of `POST /forgot-password/send-otp`. */
export type SendOtpBody = z.input<typeof sendOtpBody>;
/** `data` of `POST /forgot-password/send-otp`: the token that `verifyOtp` takes. */
export type SendOtpResult = z.output<typeof sendOtpResult>;
/** Body of `POST /forgot-password/verify-otp`. */
export type VerifyOtpBody = z.input<typeof verifyOtpBody>;
/** `data` of `POST /forgot-password/verify-otp`: the token that `reset` takes. */
export type VerifyOtpResult = z.output<typeof verifyOtpResult>;
/** Body of `POST /forgot-password/reset`. */
export type ResetPasswordBody = z.input<typeof resetPasswordBody>;
/** Body of `POST /token/refresh`. */
export type RefreshBody = z.input<typeof refreshBody>;
/** A new token pair from `POST /token/refresh`. */
export type RefreshResult = z.output<typeof refreshResult>;
/** Body of `POST /change-password`. */
export type ChangePasswordBody = z.input<typeof changePasswordBody>;
/** Body of `POST /delete-account`. */
export type DeleteAccountBody = z.input<typeof deleteAccountBody>;
/** Body of `PUT /update-basic-info`; every member optional. */
export type UpdateBasicInfoBody = z.input<typeof updateBasicInfoBody>;
/** Body of `POST /complete-onboarding`. */
export type CompleteOnboardingBody = z.input<typeof completeOnboardingBody>;
/** The caller's profile (`User` in the OpenAPI document). */
export type UserProfile = z.output<typeof userProfile>;
/** Server settings from `GET /master/setting-list`. */
export type Settings = z.output<typeof settingsList>;
/** Body of `POST /verify-email/verify`: the mailed 6-digit code. */
export type VerifyEmailBody = z.input<typeof verifyEmailBody>;
/** The clinician's time zone, pay rates and mileage rate (`GET /my-settings`). */
export type ClinicianSettings = z.output<typeof clinicianSettings>;
/** Body of `PUT /my-settings`; every member optional, unknown members refused. */
export type ClinicianSettingsBody = z.input<typeof clinicianSettingsBody>;
/** Body of `PUT /my-settings/features`: personal feature overrides (`null` clears one). */
export type PersonalFeaturesBody = z.input<typeof personalFeaturesBody>;

/** Account methods of {@link RestClient}: authentication, profile, email, own settings. */
export interface AccountsApi {
  /** `POST /sign-in`: email and password. 401 `invalid_credentials`; 429 `too_many_attempts`. */
  signIn(body: SignInBody, options?: WriteOptions): Promise<SignInResult>;
  /** `POST /sign-in/social`: a Google or Apple ID token of a registered account. */
  signInSocial(body: SocialBody, options?: WriteOptions): Promise<SignInResult>;
  /** `POST /register`: a new account with a password. 422 `email_taken`, `validation_failed`. */
  register(body: RegisterBody, options?: WriteOptions): Promise<RegisterResult>;
  /** `POST /register/social`: a new account from a Google or Apple ID token. */
  registerSocial(body: SocialBody, options?: WriteOptions): Promise<RegisterResult>;
  /** The password-reset flow: email a code, exchange it for a reset token, set the password. */
  readonly forgotPassword: {
    /** `POST /forgot-password/send-otp`: mails a 6-digit code. */
    sendOtp(body: SendOtpBody, options?: WriteOptions): Promise<SendOtpResult>;
    /** `POST /forgot-password/verify-otp`: the emailed code for a reset token. */
    verifyOtp(body: VerifyOtpBody, options?: WriteOptions): Promise<VerifyOtpResult>;
    /** `POST /forgot-password/reset`: sets the new password and signs out every device. */
    reset(body: ResetPasswordBody, options?: WriteOptions): Promise<MessageResult>;
  };
  /** `POST /token/refresh`: a new token pair; the refresh token presented is retired. */
  refresh(body: RefreshBody, options?: WriteOptions): Promise<RefreshResult>;
  /** `POST /logout`: revokes the current session. */
  logout(options?: AuthWriteOptions): Promise<MessageResult>;
  /** `POST /change-password`: signs out the other devices. 401 `invalid_password`. */
  changePassword(body: ChangePasswordBody, options?: AuthWriteOptions): Promise<MessageResult>;
  /** `POST /delete-account`: deletes the account and its data, confirmed by password or ID token. */
  deleteAccount(body: DeleteAccountBody, options?: AuthWriteOptions): Promise<MessageResult>;
  /** `GET /my-profile`. */
  myProfile(options?: ReadOptions): Promise<UserProfile>;
  /** `PUT /update-basic-info`: name, email, phone, address; answers the updated profile. */
  updateBasicInfo(body: UpdateBasicInfoBody, options?: AuthWriteOptions): Promise<UserProfile>;
  /** `POST /complete-onboarding`: discipline and license; clears `needs_onboarding`. */
  completeOnboarding(body: CompleteOnboardingBody, options?: AuthWriteOptions): Promise<UserProfile>;
  /** `GET /therapist-discipline`: the discipline codes onboarding accepts. */
  disciplines(options?: ReadOptions): Promise<string[]>;
  /** `GET /master/setting-list`: server settings the app needs. */
  settings(options?: ReadOptions): Promise<Settings>;
  /** Proving the account's email address (needed to see and accept in-app invitations). */
  readonly verifyEmail: {
    /** `POST /verify-email/send-otp`: mails a 6-digit code. 409 when already verified; 429 when asked too often. */
    sendOtp(options?: AuthWriteOptions): Promise<MessageResult>;
    /** `POST /verify-email/verify`: the mailed code; answers the profile with `email_verified: true`. */
    verify(body: VerifyEmailBody, options?: AuthWriteOptions): Promise<UserProfile>;
  };
  /** The clinician's own settings. */
  readonly mySettings: {
    /** `GET /my-settings`: time zone (decides "today"), pay rates, mileage rate. */
    get(options?: ReadOptions): Promise<ClinicianSettings>;
    /** `PUT /my-settings`: sets the members sent; answers the settings in effect. */
    update(body: ClinicianSettingsBody, options?: AuthWriteOptions): Promise<ClinicianSettings>;
    /**
     * `PUT /my-settings/features`: personal feature overrides. They apply only while the
     * caller has no organization seat; the answer is the configuration in effect now.
     */
    updateFeatures(body: PersonalFeaturesBody, options?: AuthWriteOptions): Promise<EffectiveConfig>;
  };
}

export function accountsApi(call: Invoker): AccountsApi {
  return {
    signIn: (body, o) => call.data(E.signIn, { body }, o),
    signInSocial: (body, o) => call.data(E.signInSocial, { body }, o),
    register: (body, o) => call.data(E.register, { body }, o),
    registerSocial: (body, o) => call.data(E.registerSocial, { body }, o),
    forgotPassword: {
      sendOtp: (body, o) => call.data(E['forgotPassword.sendOtp'], { body }, o),
      verifyOtp: (body, o) => call.data(E['forgotPassword.verifyOtp'], { body }, o),
      reset: (body, o) => call.message(E['forgotPassword.reset'], { body }, o),
    },
    refresh: (body, o) => call.data(E.refresh, { body }, o),
    logout: (o) => call.message(E.logout, {}, o),
    changePassword: (body, o) => call.message(E.changePassword, { body }, o),
    deleteAccount: (body, o) => call.message(E.deleteAccount, { body }, o),
    myProfile: (o) => call.data(E.myProfile, {}, o),
    updateBasicInfo: (body, o) => call.data(E.updateBasicInfo, { body }, o),
    completeOnboarding: (body, o) => call.data(E.completeOnboarding, { body }, o),
    disciplines: (o) => call.data(E.disciplines, {}, o),
    settings: (o) => call.data(E.settings, {}, o),
    verifyEmail: {
      sendOtp: (o) => call.message(E['verifyEmail.sendOtp'], {}, o),
      verify: (body, o) => call.data(E['verifyEmail.verify'], { body }, o),
    },
    mySettings: {
      get: (o) => call.data(E['mySettings.get'], {}, o),
      update: (body, o) => call.data(E['mySettings.update'], { body }, o),
      updateFeatures: (body, o) => call.data(E['mySettings.updateFeatures'], { body }, o),
    },
  };
}
