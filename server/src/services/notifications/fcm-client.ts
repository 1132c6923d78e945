/**
 * FCM HTTP v1: `POST {api}/v1/projects/{project}/messages:send` with an OAuth2 access token
 * obtained from the service account by the JWT-bearer grant (RFC 7523), signed with jose and
 * cached until shortly before it expires.
 */
import { importPKCS8, SignJWT, type CryptoKey } from 'jose';
import type { FcmConfig } from '../../config.ts';
import type { Clock } from '../../clock.ts';

const SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';
/** A cached token is renewed this long before its expiry, so none is used as it lapses. */
const EXPIRY_MARGIN_MS = 60_000;
const TIMEOUT_MS = 15_000;

export interface PushMessage {
  readonly token: string;
  readonly title: string;
  readonly body: string;
  /** FCM data values must be strings. */
  readonly data: Record<string, string>;
}

/**
 * `sent`; `unregistered`: the token is dead (prune it); `rejected`: a permanent refusal of
 * this message (not retried); a thrown error is transient (retried by the job).
 */
export type PushOutcome = 'sent' | 'unregistered' | 'rejected';

export class TransientPushError extends Error {
  override readonly name = 'TransientPushError';
}

interface FcmErrorBody {
  error?: {
    code?: number;
    status?: string;
    details?: Array<{ '@type'?: string; errorCode?: string; fieldViolations?: Array<{ field?: string }> }>;
  };
}

/** Whether an FCM error answer says the registration token itself is bad or gone. */
export function tokenIsDead(httpStatus: number, body: FcmErrorBody): boolean {
  const details = body.error?.details ?? [];
  const codes = details.map((d) => d.errorCode).filter(Boolean);
  if (codes.includes('UNREGISTERED')) return true;
  if (httpStatus === 404 || body.error?.status === 'NOT_FOUND') return true;
  if (httpStatus === 400 || body.error?.status === 'INVALID_ARGUMENT') {
    // INVALID_ARGUMENT also covers a malformed message; only a violation on the token prunes it.
    return details.some((d) => (d.fieldViolations ?? []).some((v) => v.field === 'message.token'));
  }
  return false;
}

export function createFcmClient(opts: { config: FcmConfig; clock: Clock; fetch?: typeof fetch }) {
  const { config, clock } = opts;
  const doFetch = opts.fetch ?? fetch;
  const account = config.serviceAccount;
  let key: Promise<CryptoKey> | null = null;
  let cached: { token: string; expiresAt: number } | null = null;
  let inflight: Promise<string> | null = null;

  async function exchange(): Promise<string> {
    key ??= importPKCS8(account.private_key, 'RS256');
    const now = Math.floor(clock.now().getTime() / 1000);
    const assertion = await new SignJWT({ scope: SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
      .setIssuer(account.client_email)
      .setSubject(account.client_email)
      .setAudience(config.tokenUrl)
      .setIssuedAt(now)
      .setExpirationTime(now + 3600)
      .sign(await key);
    const res = await doFetch(config.tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion }).toString(),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    if (!res.ok) throw new TransientPushError(`FCM token exchange answered ${res.status}`);
    const body = (await res.json()) as { access_token?: unknown; expires_in?: unknown };
    if (typeof body.access_token !== 'string') throw new TransientPushError('FCM token exchange answered no access_token');
    const ttl = typeof body.expires_in === 'number' ? body.expires_in : 3600;
    cached = { token: body.access_token, expiresAt: clock.now().getTime() + ttl * 1000 };
    return body.access_token;
  }

  async function accessToken(): Promise<string> {
    if (cached && cached.expiresAt - EXPIRY_MARGIN_MS > clock.now().getTime()) return cached.token;
    // Concurrent sends share one exchange.
    inflight ??= exchange().finally(() => {
      inflight = null;
    });
    return inflight;
  }

  return {
    /** `signal`: the job's; at shutdown it ends this send (the job is retried), not the shared token exchange. */
    async send(message: PushMessage, signal?: AbortSignal): Promise<PushOutcome> {
      const token = await unlessAborted(accessToken(), signal);
      const url = `${config.apiUrl}/v1/projects/${encodeURIComponent(account.project_id)}/messages:send`;
      const res = await doFetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          message: { token: message.token, notification: { title: message.title, body: message.body }, data: message.data },
        }),
        signal: signal ? AbortSignal.any([AbortSignal.timeout(TIMEOUT_MS), signal]) : AbortSignal.timeout(TIMEOUT_MS),
      });
      if (res.ok) return 'sent';
      const body = (await res.json().catch(() => ({}))) as FcmErrorBody;
      if (res.status === 401) {
        // The cached token was revoked or expired early: the retry exchanges a new one.
        cached = null;
        throw new TransientPushError('FCM answered 401');
      }
      if (tokenIsDead(res.status, body)) return 'unregistered';
      if (res.status === 429 || res.status >= 500) throw new TransientPushError(`FCM answered ${res.status}`);
      return 'rejected';
    },
  };
}

export type FcmClient = ReturnType<typeof createFcmClient>;

/** `work`, or its caller's signal's reason once that fires first (`work` itself goes on for its other waiters). */
function unlessAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
