/**
 * The typed REST client: one method per endpoint of the clinician API, request and response
 * types taken from the same zod schemas the server validates with.
 */
import * as z from 'zod';
import {
  changePasswordBody,
  completeOnboardingBody,
  deleteAccountBody,
  envelope,
  messageOnly,
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
  verifyOtpBody,
  verifyOtpResult,
} from '@fieldchart/schema/api';
import type { FieldchartApiError, NetworkError, UnexpectedResponseError } from './errors.ts';
import { createTransport, type Call, type FetchLike, type TokenSource, type UnauthorizedHandler } from './transport.ts';

/** The path every endpoint lives under. */
export const API_PREFIX = '/api/therapist/v1';

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
/** What endpoints without response data answer: the server's message. */
export interface MessageResult {
  readonly message: string;
}

/** Options every call takes. */
export interface RequestOptions {
  /** Aborts the request; the signal's reason is rethrown unchanged. */
  readonly signal?: AbortSignal;
}

/** Options of calls that change something (POST/PUT). */
export interface WriteOptions extends RequestOptions {
  /**
   * Sent as `Idempotency-Key`: a retry with the same key and body gets the first response
   * and changes nothing (contract: idempotent retries). Use one key per intended change,
   * e.g. from {@link newIdempotencyKey}, and reuse it for every retry of that change.
   */
  readonly idempotencyKey?: string;
}

/** Options of calls that need a session. */
export interface AuthenticatedOptions {
  /** Use this access token instead of asking `getToken`. */
  readonly token?: string;
}

/** Options of {@link createRestClient}. */
export interface RestClientOptions {
  /** The server's origin (and path, behind a proxy that adds one), e.g. `https://api.example.com`. */
  readonly baseUrl: string;
  /** Defaults to the global `fetch`. */
  readonly fetch?: FetchLike;
  /** Supplies the access token for endpoints that need a session. */
  readonly getToken?: TokenSource;
  /**
   * Called when the session behind a request is gone (401 with `missing_token`,
   * `invalid_token`, `account_disabled`); return `true` once a new token is available to
   * retry the request once. Not called for wrong passwords or codes, which are 401s too.
   */
  readonly onUnauthorized?: UnauthorizedHandler;
  /** Gives up on a request after this long, with a {@link NetworkError}; 0 disables. Default 30 000. */
  readonly timeoutMs?: number;
  /** Defaults to {@link API_PREFIX}. */
  readonly apiPrefix?: string;
}

/** The clinician API, one method per endpoint. Methods answer the envelope's `data`. */
export interface RestClient {
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
  logout(options?: WriteOptions & AuthenticatedOptions): Promise<MessageResult>;
  /** `POST /change-password`: signs out the other devices. 401 `invalid_password`. */
  changePassword(body: ChangePasswordBody, options?: WriteOptions & AuthenticatedOptions): Promise<MessageResult>;
  /** `POST /delete-account`: deletes the account and its data, confirmed by password or ID token. */
  deleteAccount(body: DeleteAccountBody, options?: WriteOptions & AuthenticatedOptions): Promise<MessageResult>;
  /** `GET /my-profile`. */
  myProfile(options?: RequestOptions & AuthenticatedOptions): Promise<UserProfile>;
  /** `PUT /update-basic-info`: name, email, phone, address; answers the updated profile. */
  updateBasicInfo(body: UpdateBasicInfoBody, options?: WriteOptions & AuthenticatedOptions): Promise<UserProfile>;
  /** `POST /complete-onboarding`: discipline and license; clears `needs_onboarding`. */
  completeOnboarding(body: CompleteOnboardingBody, options?: WriteOptions & AuthenticatedOptions): Promise<UserProfile>;
  /** `GET /therapist-discipline`: the discipline codes onboarding accepts. */
  disciplines(options?: RequestOptions & AuthenticatedOptions): Promise<string[]>;
  /** `GET /master/setting-list`: server settings the app needs. */
  settings(options?: RequestOptions & AuthenticatedOptions): Promise<Settings>;
}

// Built once: a schema per response shape, envelope included.
const responses = {
  signIn: envelope(signInResult),
  register: envelope(registerResult),
  sendOtp: envelope(sendOtpResult),
  verifyOtp: envelope(verifyOtpResult),
  refresh: envelope(refreshResult),
  profile: envelope(userProfile),
  disciplines: envelope(z.array(z.string())),
  settings: envelope(settingsList),
};

/**
 * A fresh random key for {@link WriteOptions.idempotencyKey}. Keep it with the pending change
 * (e.g. in the outbox) so that every retry sends the same one.
 */
export function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}

/**
 * Creates a client for the clinician API at `baseUrl`.
 *
 * @example
 * ```ts
 * let token: string | null = null;
 * const api = createRestClient({ baseUrl: 'https://fieldchart.example', getToken: () => token });
 * token = (await api.signIn({ email, password })).token;
 * const me = await api.myProfile();
 * ```
 *
 * Every method throws {@link FieldchartApiError} for an error status (`status`, `code`,
 * `fieldErrors`), {@link NetworkError} when the server could not be reached, and
 * {@link UnexpectedResponseError} when a success body does not match the schema.
 */
export function createRestClient(options: RestClientOptions): RestClient {
  const transport = createTransport({
    baseUrl: options.baseUrl,
    apiPrefix: options.apiPrefix ?? API_PREFIX,
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    getToken: options.getToken,
    onUnauthorized: options.onUnauthorized,
    timeoutMs: options.timeoutMs ?? 30_000,
  });

  type Opts = WriteOptions & AuthenticatedOptions;
  const data = async <S extends z.ZodType<{ data: unknown }>>(call: Call<S>) => (await transport.send(call)).data as z.output<S>['data'];
  const message = async (call: Omit<Call<typeof messageOnly>, 'response'>): Promise<MessageResult> => {
    const body = await transport.send({ ...call, response: messageOnly });
    return { message: body.message };
  };
  const post = (path: string, body: unknown, o: Opts | undefined, auth: boolean) => ({
    method: 'POST' as const,
    path,
    body,
    auth,
    idempotencyKey: o?.idempotencyKey,
    token: auth ? o?.token : undefined,
    signal: o?.signal,
  });
  const get = (path: string, o: (RequestOptions & AuthenticatedOptions) | undefined) => ({
    method: 'GET' as const,
    path,
    auth: true,
    token: o?.token,
    signal: o?.signal,
  });

  return {
    signIn: (body, o) => data({ ...post('/sign-in', body, o, false), response: responses.signIn }),
    signInSocial: (body, o) => data({ ...post('/sign-in/social', body, o, false), response: responses.signIn }),
    register: (body, o) => data({ ...post('/register', body, o, false), response: responses.register }),
    registerSocial: (body, o) => data({ ...post('/register/social', body, o, false), response: responses.register }),
    forgotPassword: {
      sendOtp: (body, o) => data({ ...post('/forgot-password/send-otp', body, o, false), response: responses.sendOtp }),
      verifyOtp: (body, o) => data({ ...post('/forgot-password/verify-otp', body, o, false), response: responses.verifyOtp }),
      reset: (body, o) => message(post('/forgot-password/reset', body, o, false)),
    },
    refresh: (body, o) => data({ ...post('/token/refresh', body, o, false), response: responses.refresh }),
    logout: (o) => message(post('/logout', undefined, o, true)),
    changePassword: (body, o) => message(post('/change-password', body, o, true)),
    deleteAccount: (body, o) => message(post('/delete-account', body, o, true)),
    myProfile: (o) => data({ ...get('/my-profile', o), response: responses.profile }),
    updateBasicInfo: (body, o) => data({ ...post('/update-basic-info', body, o, true), method: 'PUT', response: responses.profile }),
    completeOnboarding: (body, o) => data({ ...post('/complete-onboarding', body, o, true), response: responses.profile }),
    disciplines: (o) => data({ ...get('/therapist-discipline', o), response: responses.disciplines }),
    settings: (o) => data({ ...get('/master/setting-list', o), response: responses.settings }),
  };
}
