import path from 'node:path';
import { z } from 'zod';

/**
 * The one place that reads the environment. Parsed once at boot, frozen and passed down;
 * an invalid value stops the process with a message naming the variable.
 */

const csv = z
  .string()
  .optional()
  .transform((v) => (v ? v.split(',').map((s) => s.trim()).filter(Boolean) : []));

const int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def);

const bool = (def: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .optional()
    .transform((v) => (v === undefined ? def : v === 'true' || v === '1' || v === 'yes'));

const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Also run every response through its zod schema and compare (default: on under NODE_ENV=test). */
  RESPONSE_CHECK: z.enum(['true', 'false', '1', '0', 'yes', 'no']).optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATABASE_POOL_SIZE: int(10, 1),
  FIELDCHART_DATA_DIR: z.string().min(1).default('./.fieldchart'),
  /** The built field app served at /app (scripts/build-app.ts); unset: dist/app or app/dist. */
  FIELD_APP_DIR: z.string().min(1).optional(),
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: int(3000, 0).pipe(z.number().max(65535)),
  TRUST_PROXY: bool(false),
  // Browser origins allowed to call the API cross-origin; each an exact scheme://host[:port].
  // /metrics: to bearers of this token on the API port, and/or on an address of its own.
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  CORS_ORIGINS: csv.pipe(z.array(z.string().regex(/^https?:\/\/[^/\s]+$/, 'must be comma-separated origins such as https://app.example.com (no path, no *)'))),
  TLS_CERT_FILE: z.string().optional(),
  TLS_KEY_FILE: z.string().optional(),
  APP_URL: z.url().default('http://localhost:3000'),
  SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL')
    .optional(),
  MAIL_FROM: z.string().min(3).default('Fieldchart <no-reply@fieldchart.local>'),
  GOOGLE_CLIENT_IDS: csv,
  APPLE_CLIENT_IDS: csv,
  GOOGLE_JWKS_URL: z.url().default('https://www.googleapis.com/oauth2/v3/certs'),
  APPLE_JWKS_URL: z.url().default('https://appleid.apple.com/auth/keys'),
  JWT_ISSUER: z.string().min(1).default('fieldchart'),
  JWT_AUDIENCE: z.string().min(1).default('fieldchart-therapist'),
  JWT_PRIVATE_JWKS: z.string().optional(),
  PHI_KEYS: z.string().optional(),
  ACCESS_TOKEN_TTL_SECONDS: int(3600, 30),
  REFRESH_TOKEN_TTL_SECONDS: int(30 * 24 * 3600, 60),
  TRIAL_DAYS: int(14, 0),
  OTP_TTL_SECONDS: int(300, 30),
  OTP_MAX_ATTEMPTS: int(5, 1),
  RESET_TOKEN_TTL_SECONDS: int(900, 60),
  OTP_SENDS_PER_EMAIL_PER_HOUR: int(5, 1),
  OTP_SENDS_PER_ADDRESS_PER_HOUR: int(100, 1),
  ORGANIZATION_MAILS_PER_USER_PER_HOUR: int(30, 1),
  SIGNIN_FAILURES_PER_ACCOUNT: int(10, 1),
  SIGNIN_FAILURES_PER_ADDRESS: int(200, 1),
  SIGNIN_FAILURE_WINDOW_SECONDS: int(900, 1),
  RATE_LIMIT_PER_USER_PER_MINUTE: int(1200, 0),
  RATE_LIMIT_PER_ADDRESS_PER_MINUTE: int(600, 0),
  IDEMPOTENCY_TTL_SECONDS: int(24 * 3600, 60),
  /** 0: one fewer than the machine's cores, at least 1. */
  PASSWORD_HASH_CONCURRENCY: int(0, 0),
  WORKER_ENABLED: bool(true),
  WORKER_CONCURRENCY: int(4, 1),
  WORKER_SWEEP_INTERVAL_MS: int(60_000, 100),
  BODY_LIMIT_BYTES: int(1024 * 1024, 1024),
  REQUEST_TIMEOUT_MS: int(30_000, 100),
  HEADERS_TIMEOUT_MS: int(15_000, 100),
  CONNECTION_TIMEOUT_MS: int(120_000, 0),
  SHUTDOWN_GRACE_MS: int(10_000, 0),
  ROUTING_OSRM_URL: z.url().optional(),
  ROUTING_TIMEOUT_MS: int(5000, 100),
  GOOGLE_DISTANCE_MATRIX_KEY: z.string().min(1).optional(),
  GOOGLE_DISTANCE_MATRIX_URL: z.url().default('https://maps.googleapis.com/maps/api/distancematrix/json'),
  GOOGLE_DISTANCE_MATRIX_MAX_ELEMENTS: int(100, 1),
  GEOCODER_NOMINATIM_URL: z.url().optional(),
  GEOCODER_USER_AGENT: z.string().min(3).optional(),
  GEOCODER_MIN_INTERVAL_MS: int(1000, 0),
  GEOCODER_TIMEOUT_MS: int(5000, 100),
  ROUTING_GPS_ACCURACY_METERS: int(50, 1),
  // In-app purchases (docs/subscriptions.md).
  APPLE_IAP_ISSUER_ID: z.string().min(1).optional(),
  APPLE_IAP_KEY_ID: z.string().min(1).optional(),
  APPLE_IAP_PRIVATE_KEY: z.string().min(1).optional(),
  APPLE_BUNDLE_ID: z.string().min(1).optional(),
  APPLE_APP_APPLE_ID: z.coerce.number().int().positive().optional(),
  APPLE_IAP_ENVIRONMENT: z.enum(['Production', 'Sandbox']).default('Production'),
  APPLE_IAP_API_URL: z.url().optional(),
  APPLE_ROOT_CERTS_DIR: z.string().min(1).optional(),
  APPLE_IAP_ONLINE_CHECKS: bool(true),
  STORE_TIMEOUT_MS: int(15_000, 100),
  GOOGLE_PLAY_SERVICE_ACCOUNT_JSON: z.string().min(1).optional(),
  GOOGLE_PLAY_PACKAGE_NAME: z.string().min(1).optional(),
  GOOGLE_PLAY_API_URL: z.url().default('https://androidpublisher.googleapis.com'),
  GOOGLE_PLAY_TOKEN_URL: z.url().optional(),
  GOOGLE_PUBSUB_AUDIENCE: z.string().min(1).optional(),
  GOOGLE_PUBSUB_SERVICE_ACCOUNT: z.string().min(1).optional(),
  MESSAGES_REPLY_DOMAIN: z
    .string()
    .regex(/^[A-Za-z0-9.-]+$/, 'must be a mail domain (letters, digits, dots, hyphens)')
    .default('fieldchart.local'),
  INBOUND_SMTP_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  INBOUND_SMTP_HOST: z.string().min(1).default('127.0.0.1'),
  INBOUND_MAIL_MAX_BYTES: int(2 * 1024 * 1024, 1024),
  FCM_SERVICE_ACCOUNT_JSON: z.string().optional(),
  FCM_API_URL: z.url().default('https://fcm.googleapis.com'),
  FCM_TOKEN_URL: z.url().optional(),
  AUDIO_STORE: z.enum(['local', 's3']).default('local'),
  S3_ENDPOINT: z.url().optional(),
  S3_BUCKET: z.string().min(1).optional(),
  S3_REGION: z.string().min(1).default('us-east-1'),
  S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  S3_FORCE_PATH_STYLE: bool(false),
  S3_TIMEOUT_MS: int(30_000, 100),
  VISIT_AUDIO_MAX_BYTES: int(50 * 1024 * 1024, 1),
  AI_AUDIO_MAX_BYTES: int(100 * 1024 * 1024, 1),
  AUDIO_MAX_DURATION_SECONDS: int(3600, 1),
  AUDIO_UPLOAD_EXPIRY_HOURS: int(24, 1),
  AI_NOTES_URL: z.url().optional(),
  AI_NOTES_API_KEY: z.string().min(1).optional(),
  AI_NOTES_MODEL: z.string().min(1).default('gpt-4o-mini'),
  AI_NOTES_TIMEOUT_MS: int(60_000, 100),
  STT_ENGINE: z.enum(['auto', 'openai', 'pocketsphinx', 'none']).default('auto'),
  STT_URL: z.url().optional(),
  STT_API_KEY: z.string().min(1).optional(),
  STT_MODEL: z.string().min(1).default('whisper-1'),
  STT_TIMEOUT_MS: int(300_000, 100),
  POCKETSPHINX_BIN: z.string().min(1).default('pocketsphinx_continuous'),
  POCKETSPHINX_MODEL_DIR: z.string().min(1).default('/usr/share/pocketsphinx/model/en-us'),
  AI_JOB_MAX_ATTEMPTS: int(5, 1),
  AI_NORMALISE_TIMEOUT_MS: int(120_000, 1000),
});

const serviceAccountSchema = z.object({
  client_email: z.string().min(1),
  private_key: z.string().includes('PRIVATE KEY', { message: 'must be a PEM private key' }),
  token_uri: z.url().optional(),
});

export interface AppleIapConfig {
  /** App Store Server API credentials (App Store Connect → Users and Access → Integrations → In-App Purchase). */
  readonly api: { readonly issuerId: string; readonly keyId: string; readonly privateKey: string } | null;
  readonly bundleId: string;
  readonly appAppleId: number | null;
  readonly environment: 'Production' | 'Sandbox';
  /** Overrides the App Store Server API base URL (tests' stand-in); null: Apple's for the environment. */
  readonly apiUrl: string | null;
  /** Directory of trusted root certificates (DER or PEM); null: the embedded Apple Root CA - G3. */
  readonly rootCertsDir: string | null;
  /** OCSP revocation checks of the signing chain (needs Apple's OCSP responder). */
  readonly onlineChecks: boolean;
  /** How long one App Store Server API request may take (STORE_TIMEOUT_MS), then `store_unavailable`. */
  readonly timeoutMs: number;
}

export interface GooglePlayConfig {
  /** The service account the Play Console granted "View financial data, orders and subscriptions"; null: receipts cannot be verified. */
  readonly serviceAccount: { readonly clientEmail: string; readonly privateKey: string } | null;
  readonly packageName: string;
  readonly apiUrl: string;
  readonly tokenUrl: string;
  /** Expected `aud` of the Pub/Sub push OIDC token; null: notifications are refused. */
  readonly pushAudience: string | null;
  /** Expected `email` of the push token (the push subscription's service account); null: any Google-signed token for the audience. */
  readonly pushServiceAccount: string | null;
  /** How long one token exchange or Android Publisher request may take (STORE_TIMEOUT_MS), then `store_unavailable`. */
  readonly timeoutMs: number;
}

export interface Config {
  readonly env: 'development' | 'production' | 'test';
  readonly logLevel: z.infer<typeof envSchema>['LOG_LEVEL'];
  /** Check each response against its zod schema besides the compiled serializer (http/response-serializer.ts). */
  readonly responseCheck: boolean;
  readonly database: { readonly kind: 'pglite'; readonly dataDir: string } | {
    readonly kind: 'postgres';
    readonly url: string;
    readonly poolSize: number;
  };
  readonly dataDir: string;
  readonly host: string;
  readonly port: number;
  readonly trustProxy: boolean;
  readonly tls: { readonly certFile: string; readonly keyFile: string } | null;
  /** /metrics: `token` serves it on the API port to its bearers; `listen` on an address of its own. */
  readonly metrics: { readonly token: string | null; readonly listen: { readonly host: string; readonly port: number } | null };
  /** The built field app's directory (FIELD_APP_DIR); null: look for it where the builds put it. */
  readonly fieldAppDir: string | null;
  /** Origins allowed to call the API from a browser (CORS); empty: none. */
  readonly corsOrigins: readonly string[];
  /** Send Strict-Transport-Security: TLS terminated here, or APP_URL is https (a TLS proxy in front). */
  readonly hsts: boolean;
  readonly appUrl: string;
  readonly mail: { readonly smtpUrl: string | null; readonly from: string };
  readonly social: {
    readonly google: { readonly clientIds: readonly string[]; readonly jwksUrl: string };
    readonly apple: { readonly clientIds: readonly string[]; readonly jwksUrl: string };
  };
  readonly jwt: {
    readonly issuer: string;
    readonly audience: string;
    readonly privateJwks: string | null;
    readonly accessTtlSeconds: number;
    readonly refreshTtlSeconds: number;
  };
  /** The PHI key ring as JSON (PHI_KEYS); null: generated into the data dir. */
  readonly phiKeys: string | null;
  readonly trialDays: number;
  readonly limits: {
    readonly otpTtlSeconds: number;
    readonly otpMaxAttempts: number;
    readonly resetTokenTtlSeconds: number;
    readonly otpSendsPerEmailPerHour: number;
    readonly otpSendsPerAddressPerHour: number;
    /** Member invitations and organization claims one user may mail per hour. */
    readonly organizationMailsPerUserPerHour: number;
    readonly signinFailuresPerAccount: number;
    readonly signinFailuresPerAddress: number;
    readonly signinFailureWindowSeconds: number;
    /**
     * REST requests per minute (fixed windows counted in the database, shared by every node):
     * per signed-in user, and per client address for requests that carry no valid token.
     * 0: that limit is off.
     */
    readonly requestsPerUserPerMinute: number;
    readonly requestsPerAddressPerMinute: number;
    readonly idempotencyTtlSeconds: number;
    readonly bodyLimitBytes: number;
    /** argon2 computations at once (security/passwords.ts; 0: its default, cores − 1); the rest queue. */
    readonly passwordHashConcurrency: number;
  };
  /**
   * Slow clients: the whole request (headers and body) must arrive within `requestMs`, the
   * headers within `headersMs`; a socket with no traffic for `connectionIdleMs` is closed (0: never).
   */
  readonly timeouts: { readonly requestMs: number; readonly headersMs: number; readonly connectionIdleMs: number };
  /**
   * `sweepIntervalMs` (PostgreSQL): how often a node looks for dead nodes' workers and releases
   * their locked jobs (jobs/worker-liveness.ts) — the longest a killed node's job waits.
   */
  readonly worker: { readonly enabled: boolean; readonly concurrency: number; readonly sweepIntervalMs: number };
  readonly shutdownGraceMs: number;
  /** Route optimisation: travel times and geocoding (docs/routing.md). */
  readonly routing: {
    /** An OSRM-compatible server (its `table` service); null: great-circle estimates. */
    readonly osrmUrl: string | null;
    /** Live traffic (the Distance Matrix API), tried before OSRM; null: not configured. */
    readonly traffic: { readonly url: string; readonly apiKey: string; readonly maxElements: number } | null;
    readonly timeoutMs: number;
    /** A Nominatim-compatible geocoder; null: offline US ZIP centroids. */
    readonly nominatimUrl: string | null;
    readonly userAgent: string;
    /** Spacing between geocoder requests (the public Nominatim allows one a second). */
    readonly geocoderMinIntervalMs: number;
    readonly geocoderTimeoutMs: number;
    /** `arrive` fixes at most this inaccurate (metres) teach the patient's location. */
    readonly gpsAccuracyMeters: number;
  };
  /** null when APPLE_BUNDLE_ID is unset: no App Store to verify against. */
  readonly appleIap: AppleIapConfig | null;
  /** null when GOOGLE_PLAY_PACKAGE_NAME is unset: no Play store to verify against. */
  readonly googlePlay: GooglePlayConfig | null;
  readonly messages: {
    /** Domain of the per-conversation reply addresses `reply+<token>@<domain>`. */
    readonly replyDomain: string;
    /** The inbound SMTP listener for patients' replies; null: off. */
    readonly inboundSmtp: { readonly host: string; readonly port: number; readonly maxBytes: number } | null;
  };
  /** FCM HTTP v1 push; null: notifications are recorded but not pushed. */
  readonly fcm: FcmConfig | null;
  /** Stored audio (services/audio): where, how big, how long. */
  readonly audio: {
    /** `local`: encrypted files under the data dir's audio/; `s3`: an S3-compatible bucket (same encryption). */
    readonly store:
      | { readonly kind: 'local' }
      | {
          readonly kind: 's3';
          readonly endpoint: string | null;
          readonly bucket: string;
          readonly region: string;
          readonly accessKeyId: string | null;
          readonly secretAccessKey: string | null;
          readonly forcePathStyle: boolean;
          /** Connecting, and any silence of an open request (S3_TIMEOUT_MS): then the request fails. */
          readonly timeoutMs: number;
        };
    /** Upload caps of the spec: POST /visit-audio-upload 50 MB, POST /ai/process-audio and tus 100 MB. */
    readonly visitAudioMaxBytes: number;
    readonly aiAudioMaxBytes: number;
    /** ffprobe refuses longer recordings before anything is decoded. */
    readonly maxDurationSeconds: number;
    /** Unfinished tus uploads are deleted this long after they were created. */
    readonly uploadExpiryHours: number;
  };
  readonly ai: {
    /** Note generation: an OpenAI-compatible chat-completions endpoint, or (url null) the local structurer. */
    readonly notes: {
      readonly url: string | null;
      readonly apiKey: string | null;
      readonly model: string;
      readonly timeoutMs: number;
    };
    /**
     * Speech to text: `openai` (an OpenAI-compatible /v1/audio/transcriptions at url),
     * `pocketsphinx` (offline, Debian's binary and US English model), `auto` (openai when
     * STT_URL is set, else pocketsphinx when installed), or `none`.
     */
    readonly stt: {
      readonly engine: 'auto' | 'openai' | 'pocketsphinx' | 'none';
      readonly url: string | null;
      readonly apiKey: string | null;
      readonly model: string;
      readonly timeoutMs: number;
      readonly pocketsphinx: { readonly bin: string; readonly modelDir: string };
    };
    /** The ai_process_audio job: attempts (graphile-worker's backoff) before `failed`. */
    readonly pipeline: { readonly maxAttempts: number; readonly normaliseTimeoutMs: number };
  };
}

export interface FcmServiceAccount {
  readonly project_id: string;
  readonly client_email: string;
  readonly private_key: string;
  readonly token_uri?: string | undefined;
}

export interface FcmConfig {
  readonly serviceAccount: FcmServiceAccount;
  /** Base URL of the FCM API (`…/v1/projects/{project}/messages:send` is appended). */
  readonly apiUrl: string;
  /** OAuth2 token endpoint for the JWT-bearer grant. */
  readonly tokenUrl: string;
}

/** FCM sends per project, so its service account must name one. */
const fcmServiceAccountSchema = serviceAccountSchema.extend({ project_id: z.string().min(1) });

function fcmConfigOf(json: string | undefined, apiUrl: string, tokenUrl: string | undefined): FcmConfig | null {
  if (!json) return null;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new ConfigError('Invalid configuration:\n  FCM_SERVICE_ACCOUNT_JSON: must be the JSON of a Google service account key');
  }
  const parsed = fcmServiceAccountSchema.safeParse(raw);
  if (!parsed.success) {
    const fields = parsed.error.issues.map((i) => i.path.join('.') || '(root)').join(', ');
    throw new ConfigError(`Invalid configuration:\n  FCM_SERVICE_ACCOUNT_JSON: missing or invalid ${fields}`);
  }
  const account = parsed.data;
  return {
    serviceAccount: account,
    apiUrl: apiUrl.replace(/\/+$/, ''),
    tokenUrl: tokenUrl ?? account.token_uri ?? 'https://oauth2.googleapis.com/token',
  };
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/** Parses an environment (process.env at boot, a plain object in tests). */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(env)'}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  if ((e.TLS_CERT_FILE && !e.TLS_KEY_FILE) || (!e.TLS_CERT_FILE && e.TLS_KEY_FILE)) {
    throw new ConfigError('Invalid configuration:\n  TLS_CERT_FILE and TLS_KEY_FILE must be set together');
  }
  if (e.NODE_ENV === 'production' && !e.PHI_KEYS) {
    throw new ConfigError(
      'Invalid configuration:\n  PHI_KEYS is required when NODE_ENV=production (PHI must not be encrypted under a key kept beside the data)',
    );
  }
  if (e.NODE_ENV === 'production' && !e.JWT_PRIVATE_JWKS) {
    throw new ConfigError(
      'Invalid configuration:\n  JWT_PRIVATE_JWKS is required when NODE_ENV=production (every node must sign with the same keys)',
    );
  }
  if (e.AUDIO_STORE === 's3' && !e.S3_BUCKET) {
    throw new ConfigError('Invalid configuration:\n  S3_BUCKET is required when AUDIO_STORE=s3');
  }
  if (Boolean(e.S3_ACCESS_KEY_ID) !== Boolean(e.S3_SECRET_ACCESS_KEY)) {
    throw new ConfigError('Invalid configuration:\n  S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together');
  }
  if (e.HEADERS_TIMEOUT_MS > e.REQUEST_TIMEOUT_MS) {
    throw new ConfigError('Invalid configuration:\n  HEADERS_TIMEOUT_MS must not exceed REQUEST_TIMEOUT_MS');
  }
  const dataDir = path.resolve(e.FIELDCHART_DATA_DIR);
  const fail = (line: string) => {
    throw new ConfigError(`Invalid configuration:\n  ${line}`);
  };
  const appleApiVars = [e.APPLE_IAP_ISSUER_ID, e.APPLE_IAP_KEY_ID, e.APPLE_IAP_PRIVATE_KEY];
  if (appleApiVars.some(Boolean) && !appleApiVars.every(Boolean)) {
    fail('APPLE_IAP_ISSUER_ID, APPLE_IAP_KEY_ID and APPLE_IAP_PRIVATE_KEY must be set together');
  }
  if (appleApiVars.every(Boolean) && !e.APPLE_BUNDLE_ID) fail('APPLE_BUNDLE_ID is required with the App Store Server API credentials');
  if (e.APPLE_BUNDLE_ID && e.APPLE_IAP_ENVIRONMENT === 'Production' && !e.APPLE_APP_APPLE_ID) {
    fail('APPLE_APP_APPLE_ID is required when APPLE_IAP_ENVIRONMENT=Production (notifications are checked against it)');
  }
  let serviceAccount: GooglePlayConfig['serviceAccount'] = null;
  let serviceAccountTokenUri: string | undefined;
  if (e.GOOGLE_PLAY_SERVICE_ACCOUNT_JSON) {
    if (!e.GOOGLE_PLAY_PACKAGE_NAME) fail('GOOGLE_PLAY_PACKAGE_NAME is required with GOOGLE_PLAY_SERVICE_ACCOUNT_JSON');
    let json: unknown;
    try {
      json = JSON.parse(e.GOOGLE_PLAY_SERVICE_ACCOUNT_JSON);
    } catch {
      fail('GOOGLE_PLAY_SERVICE_ACCOUNT_JSON must be the JSON key file of a service account');
    }
    const sa = serviceAccountSchema.safeParse(json);
    if (!sa.success) fail(`GOOGLE_PLAY_SERVICE_ACCOUNT_JSON: ${sa.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`);
    else {
      serviceAccount = { clientEmail: sa.data.client_email, privateKey: sa.data.private_key };
      serviceAccountTokenUri = sa.data.token_uri;
    }
  }
  return deepFreeze<Config>({
    env: e.NODE_ENV,
    logLevel: e.LOG_LEVEL,
    responseCheck: e.RESPONSE_CHECK === undefined ? e.NODE_ENV === 'test' : ['true', '1', 'yes'].includes(e.RESPONSE_CHECK),
    database: e.DATABASE_URL
      ? { kind: 'postgres', url: e.DATABASE_URL, poolSize: e.DATABASE_POOL_SIZE }
      : { kind: 'pglite', dataDir: path.join(dataDir, 'pgdata') },
    dataDir,
    host: e.HOST,
    port: e.PORT,
    trustProxy: e.TRUST_PROXY,
    corsOrigins: e.CORS_ORIGINS,
    fieldAppDir: e.FIELD_APP_DIR ? path.resolve(e.FIELD_APP_DIR) : null,
    metrics: { token: e.METRICS_TOKEN ?? null, listen: e.METRICS_PORT === undefined ? null : { host: e.METRICS_HOST, port: e.METRICS_PORT } },
    hsts: Boolean(e.TLS_CERT_FILE && e.TLS_KEY_FILE) || e.APP_URL.startsWith('https://'),
    tls: e.TLS_CERT_FILE && e.TLS_KEY_FILE ? { certFile: e.TLS_CERT_FILE, keyFile: e.TLS_KEY_FILE } : null,
    appUrl: e.APP_URL.replace(/\/+$/, ''),
    mail: { smtpUrl: e.SMTP_URL ?? null, from: e.MAIL_FROM },
    social: {
      google: { clientIds: e.GOOGLE_CLIENT_IDS, jwksUrl: e.GOOGLE_JWKS_URL },
      apple: { clientIds: e.APPLE_CLIENT_IDS, jwksUrl: e.APPLE_JWKS_URL },
    },
    jwt: {
      issuer: e.JWT_ISSUER,
      audience: e.JWT_AUDIENCE,
      privateJwks: e.JWT_PRIVATE_JWKS ?? null,
      accessTtlSeconds: e.ACCESS_TOKEN_TTL_SECONDS,
      refreshTtlSeconds: e.REFRESH_TOKEN_TTL_SECONDS,
    },
    phiKeys: e.PHI_KEYS ?? null,
    trialDays: e.TRIAL_DAYS,
    limits: {
      otpTtlSeconds: e.OTP_TTL_SECONDS,
      otpMaxAttempts: e.OTP_MAX_ATTEMPTS,
      resetTokenTtlSeconds: e.RESET_TOKEN_TTL_SECONDS,
      otpSendsPerEmailPerHour: e.OTP_SENDS_PER_EMAIL_PER_HOUR,
      otpSendsPerAddressPerHour: e.OTP_SENDS_PER_ADDRESS_PER_HOUR,
      organizationMailsPerUserPerHour: e.ORGANIZATION_MAILS_PER_USER_PER_HOUR,
      signinFailuresPerAccount: e.SIGNIN_FAILURES_PER_ACCOUNT,
      signinFailuresPerAddress: e.SIGNIN_FAILURES_PER_ADDRESS,
      signinFailureWindowSeconds: e.SIGNIN_FAILURE_WINDOW_SECONDS,
      requestsPerUserPerMinute: e.RATE_LIMIT_PER_USER_PER_MINUTE,
      requestsPerAddressPerMinute: e.RATE_LIMIT_PER_ADDRESS_PER_MINUTE,
      idempotencyTtlSeconds: e.IDEMPOTENCY_TTL_SECONDS,
      bodyLimitBytes: e.BODY_LIMIT_BYTES,
      passwordHashConcurrency: e.PASSWORD_HASH_CONCURRENCY,
    },
    timeouts: { requestMs: e.REQUEST_TIMEOUT_MS, headersMs: e.HEADERS_TIMEOUT_MS, connectionIdleMs: e.CONNECTION_TIMEOUT_MS },
    worker: { enabled: e.WORKER_ENABLED, concurrency: e.WORKER_CONCURRENCY, sweepIntervalMs: e.WORKER_SWEEP_INTERVAL_MS },
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    routing: {
      osrmUrl: e.ROUTING_OSRM_URL ? e.ROUTING_OSRM_URL.replace(/\/+$/, '') : null,
      traffic: e.GOOGLE_DISTANCE_MATRIX_KEY
        ? { url: e.GOOGLE_DISTANCE_MATRIX_URL, apiKey: e.GOOGLE_DISTANCE_MATRIX_KEY, maxElements: e.GOOGLE_DISTANCE_MATRIX_MAX_ELEMENTS }
        : null,
      timeoutMs: e.ROUTING_TIMEOUT_MS,
      nominatimUrl: e.GEOCODER_NOMINATIM_URL ? e.GEOCODER_NOMINATIM_URL.replace(/\/+$/, '') : null,
      userAgent: e.GEOCODER_USER_AGENT ?? `Fieldchart/0.1 (+${e.APP_URL.replace(/\/+$/, '')})`,
      geocoderMinIntervalMs: e.GEOCODER_MIN_INTERVAL_MS,
      geocoderTimeoutMs: e.GEOCODER_TIMEOUT_MS,
      gpsAccuracyMeters: e.ROUTING_GPS_ACCURACY_METERS,
    },
    appleIap: e.APPLE_BUNDLE_ID
      ? {
          api:
            e.APPLE_IAP_ISSUER_ID && e.APPLE_IAP_KEY_ID && e.APPLE_IAP_PRIVATE_KEY
              ? { issuerId: e.APPLE_IAP_ISSUER_ID, keyId: e.APPLE_IAP_KEY_ID, privateKey: e.APPLE_IAP_PRIVATE_KEY.replace(/\\n/g, '\n') }
              : null,
          bundleId: e.APPLE_BUNDLE_ID,
          appAppleId: e.APPLE_APP_APPLE_ID ?? null,
          environment: e.APPLE_IAP_ENVIRONMENT,
          apiUrl: e.APPLE_IAP_API_URL?.replace(/\/+$/, '') ?? null,
          rootCertsDir: e.APPLE_ROOT_CERTS_DIR ?? null,
          onlineChecks: e.APPLE_IAP_ONLINE_CHECKS,
          timeoutMs: e.STORE_TIMEOUT_MS,
        }
      : null,
    googlePlay: e.GOOGLE_PLAY_PACKAGE_NAME
      ? {
          serviceAccount,
          packageName: e.GOOGLE_PLAY_PACKAGE_NAME,
          apiUrl: e.GOOGLE_PLAY_API_URL.replace(/\/+$/, ''),
          tokenUrl: e.GOOGLE_PLAY_TOKEN_URL ?? serviceAccountTokenUri ?? 'https://oauth2.googleapis.com/token',
          pushAudience: e.GOOGLE_PUBSUB_AUDIENCE ?? null,
          pushServiceAccount: e.GOOGLE_PUBSUB_SERVICE_ACCOUNT ?? null,
          timeoutMs: e.STORE_TIMEOUT_MS,
        }
      : null,
    messages: {
      replyDomain: e.MESSAGES_REPLY_DOMAIN.toLowerCase(),
      inboundSmtp:
        e.INBOUND_SMTP_PORT === undefined ? null : { host: e.INBOUND_SMTP_HOST, port: e.INBOUND_SMTP_PORT, maxBytes: e.INBOUND_MAIL_MAX_BYTES },
    },
    fcm: fcmConfigOf(e.FCM_SERVICE_ACCOUNT_JSON, e.FCM_API_URL, e.FCM_TOKEN_URL),
    audio: {
      store:
        e.AUDIO_STORE === 's3'
          ? {
              kind: 's3',
              endpoint: e.S3_ENDPOINT ?? null,
              bucket: e.S3_BUCKET ?? '',
              region: e.S3_REGION,
              accessKeyId: e.S3_ACCESS_KEY_ID ?? null,
              secretAccessKey: e.S3_SECRET_ACCESS_KEY ?? null,
              forcePathStyle: e.S3_FORCE_PATH_STYLE,
              timeoutMs: e.S3_TIMEOUT_MS,
            }
          : { kind: 'local' },
      visitAudioMaxBytes: e.VISIT_AUDIO_MAX_BYTES,
      aiAudioMaxBytes: e.AI_AUDIO_MAX_BYTES,
      maxDurationSeconds: e.AUDIO_MAX_DURATION_SECONDS,
      uploadExpiryHours: e.AUDIO_UPLOAD_EXPIRY_HOURS,
    },
    ai: {
      notes: {
        url: e.AI_NOTES_URL ?? null,
        apiKey: e.AI_NOTES_API_KEY ?? null,
        model: e.AI_NOTES_MODEL,
        timeoutMs: e.AI_NOTES_TIMEOUT_MS,
      },
      stt: {
        engine: e.STT_ENGINE,
        url: e.STT_URL ?? null,
        apiKey: e.STT_API_KEY ?? null,
        model: e.STT_MODEL,
        timeoutMs: e.STT_TIMEOUT_MS,
        pocketsphinx: { bin: e.POCKETSPHINX_BIN, modelDir: e.POCKETSPHINX_MODEL_DIR },
      },
      pipeline: { maxAttempts: e.AI_JOB_MAX_ATTEMPTS, normaliseTimeoutMs: e.AI_NORMALISE_TIMEOUT_MS },
    },
  });
}
