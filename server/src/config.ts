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
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATABASE_POOL_SIZE: int(10, 1),
  FIELDCHART_DATA_DIR: z.string().min(1).default('./.fieldchart'),
  HOST: z.string().min(1).default('127.0.0.1'),
  PORT: int(3000, 0).pipe(z.number().max(65535)),
  TRUST_PROXY: bool(false),
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
  SIGNIN_FAILURES_PER_ACCOUNT: int(10, 1),
  SIGNIN_FAILURES_PER_ADDRESS: int(200, 1),
  SIGNIN_FAILURE_WINDOW_SECONDS: int(900, 1),
  IDEMPOTENCY_TTL_SECONDS: int(24 * 3600, 60),
  WORKER_ENABLED: bool(true),
  WORKER_CONCURRENCY: int(4, 1),
  BODY_LIMIT_BYTES: int(1024 * 1024, 1024),
  REQUEST_TIMEOUT_MS: int(30_000, 100),
  HEADERS_TIMEOUT_MS: int(15_000, 100),
  CONNECTION_TIMEOUT_MS: int(120_000, 0),
  SHUTDOWN_GRACE_MS: int(10_000, 0),
});

export interface Config {
  readonly env: 'development' | 'production' | 'test';
  readonly logLevel: z.infer<typeof envSchema>['LOG_LEVEL'];
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
    readonly signinFailuresPerAccount: number;
    readonly signinFailuresPerAddress: number;
    readonly signinFailureWindowSeconds: number;
    readonly idempotencyTtlSeconds: number;
    readonly bodyLimitBytes: number;
  };
  /**
   * Slow clients: the whole request (headers and body) must arrive within `requestMs`, the
   * headers within `headersMs`; a socket with no traffic for `connectionIdleMs` is closed (0: never).
   */
  readonly timeouts: { readonly requestMs: number; readonly headersMs: number; readonly connectionIdleMs: number };
  readonly worker: { readonly enabled: boolean; readonly concurrency: number };
  readonly shutdownGraceMs: number;
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
  if (e.HEADERS_TIMEOUT_MS > e.REQUEST_TIMEOUT_MS) {
    throw new ConfigError('Invalid configuration:\n  HEADERS_TIMEOUT_MS must not exceed REQUEST_TIMEOUT_MS');
  }
  const dataDir = path.resolve(e.FIELDCHART_DATA_DIR);
  return deepFreeze<Config>({
    env: e.NODE_ENV,
    logLevel: e.LOG_LEVEL,
    database: e.DATABASE_URL
      ? { kind: 'postgres', url: e.DATABASE_URL, poolSize: e.DATABASE_POOL_SIZE }
      : { kind: 'pglite', dataDir: path.join(dataDir, 'pgdata') },
    dataDir,
    host: e.HOST,
    port: e.PORT,
    trustProxy: e.TRUST_PROXY,
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
      signinFailuresPerAccount: e.SIGNIN_FAILURES_PER_ACCOUNT,
      signinFailuresPerAddress: e.SIGNIN_FAILURES_PER_ADDRESS,
      signinFailureWindowSeconds: e.SIGNIN_FAILURE_WINDOW_SECONDS,
      idempotencyTtlSeconds: e.IDEMPOTENCY_TTL_SECONDS,
      bodyLimitBytes: e.BODY_LIMIT_BYTES,
    },
    timeouts: { requestMs: e.REQUEST_TIMEOUT_MS, headersMs: e.HEADERS_TIMEOUT_MS, connectionIdleMs: e.CONNECTION_TIMEOUT_MS },
    worker: { enabled: e.WORKER_ENABLED, concurrency: e.WORKER_CONCURRENCY },
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
  });
}
