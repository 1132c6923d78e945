/**
 * One HTTP exchange with the Fieldchart API: build the request, run it through `fetch`,
 * turn the answer into validated data or one of the typed errors. Knows nothing of
 * individual endpoints (rest-client.ts maps those).
 */
import type * as z from 'zod';
import { errorBody } from '@fieldchart/schema/api';
import { FieldchartApiError, NetworkError, UnexpectedResponseError } from './errors.ts';

/** A `fetch` implementation: the global one, or e.g. a test's or a React Native polyfill. */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** Supplies the current access token; `null`/`undefined` when signed out. */
export type TokenSource = () => string | null | undefined | Promise<string | null | undefined>;

/**
 * Called when a request that needs a session is refused because the session is gone
 * (missing, expired or revoked token; disabled account). Return `true` after obtaining a new
 * token (e.g. with `refresh`) to have the request retried once with it; return nothing to
 * let the error propagate. An error the handler throws (a failed refresh) propagates instead.
 */
export type UnauthorizedHandler = (error: FieldchartApiError) => boolean | void | Promise<boolean | void>;

export interface TransportOptions {
  readonly baseUrl: string;
  readonly apiPrefix: string;
  readonly fetch: FetchLike;
  readonly getToken: TokenSource | undefined;
  readonly onUnauthorized: UnauthorizedHandler | undefined;
  readonly timeoutMs: number;
}

/** The HTTP methods the API uses. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** Query-string values; `undefined` and `null` members are left out. */
export type QueryValues = Readonly<Record<string, string | number | boolean | null | undefined>>;

export interface Call<S extends z.ZodType> {
  readonly method: HttpMethod;
  /** Below the API prefix, path parameters already filled in and encoded. */
  readonly path: string;
  readonly query?: QueryValues | undefined;
  /** Sends the bearer token and applies the 401 handling. */
  readonly auth: boolean;
  /** The whole success body, envelope included. */
  readonly response: S;
  readonly body?: unknown;
  readonly idempotencyKey?: string | undefined;
  readonly token?: string | undefined;
  readonly signal?: AbortSignal | undefined;
  /** Extra request headers (a download's `Range`). */
  readonly headers?: Readonly<Record<string, string>> | undefined;
}

/** A success whose body is bytes (an audio download), not the JSON envelope. */
export interface BinaryResult {
  /** 200 for the whole file, 206 for a range. */
  readonly status: number;
  readonly contentType: string | null;
  /** `bytes start-end/size` of a 206. */
  readonly contentRange: string | null;
  readonly bytes: Uint8Array;
}

/** 401 codes that mean "this session is over", as opposed to "that password is wrong". */
const SESSION_CODES = new Set(['missing_token', 'invalid_token', 'account_disabled', 'unauthorized']);

function retryAfter(headers: Headers): number | null {
  const value = headers.get('retry-after');
  if (value === null) return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

function apiError(status: number, headers: Headers, json: unknown): FieldchartApiError {
  const parsed = errorBody.safeParse(json);
  if (!parsed.success) {
    return new FieldchartApiError({ status, code: 'unexpected_response', message: `HTTP ${status}`, retryAfterSeconds: retryAfter(headers) });
  }
  const { code, message, errors } = parsed.data;
  return new FieldchartApiError({ status, code, message, fieldErrors: errors ?? {}, retryAfterSeconds: retryAfter(headers) });
}

/** The caller's signal and the client's timeout, as one signal. */
function deadline(timeoutMs: number, outer: AbortSignal | undefined) {
  const controller = new AbortController();
  let timedOut = false;
  const timer =
    timeoutMs > 0
      ? setTimeout(() => {
          timedOut = true;
          controller.abort();
        }, timeoutMs)
      : undefined;
  const forward = () => controller.abort(outer?.reason);
  if (outer?.aborted) forward();
  else outer?.addEventListener('abort', forward, { once: true });
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    done() {
      if (timer !== undefined) clearTimeout(timer);
      outer?.removeEventListener('abort', forward);
    },
  };
}

function queryString(query: QueryValues | undefined): string {
  if (query === undefined) return '';
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) params.append(name, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

export function createTransport(opts: TransportOptions) {
  const root = opts.baseUrl.replace(/\/+$/, '') + opts.apiPrefix;

  async function exchange(
    call: Call<z.ZodType>,
    token: string | null | undefined,
    binary = false,
  ): Promise<{ status: number; headers: Headers; json: unknown; bytes?: Uint8Array }> {
    const headers: Record<string, string> = { accept: binary ? '*/*' : 'application/json', ...call.headers };
    if (call.auth && token) headers.authorization = `Bearer ${token}`;
    if (call.idempotencyKey !== undefined) headers['idempotency-key'] = call.idempotencyKey;
    let body: string | FormData | undefined;
    if (call.body instanceof FormData) {
      // Multipart uploads (audio): fetch writes the boundary into the content type itself.
      body = call.body;
    } else if (call.body !== undefined) {
      body = JSON.stringify(call.body);
      headers['content-type'] = 'application/json';
    }
    const limit = deadline(opts.timeoutMs, call.signal);
    try {
      const res = await opts.fetch(root + call.path + queryString(call.query), {
        method: call.method,
        headers,
        signal: limit.signal,
        ...(body !== undefined ? { body } : {}),
      });
      if (binary && res.status >= 200 && res.status < 300) {
        return { status: res.status, headers: res.headers, json: undefined, bytes: new Uint8Array(await res.arrayBuffer()) };
      }
      const text = await res.text();
      let json: unknown;
      try {
        json = text === '' ? undefined : JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: res.status, headers: res.headers, json };
    } catch (err) {
      if (call.signal?.aborted) throw call.signal.reason;
      if (limit.timedOut()) throw new NetworkError(`${call.method} ${call.path} timed out after ${opts.timeoutMs} ms`, { cause: err, timedOut: true });
      throw new NetworkError(`${call.method} ${call.path} failed: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    } finally {
      limit.done();
    }
  }

  /** One exchange with the 401 handling: a gone session may be renewed once by `onUnauthorized`. */
  async function authorized(call: Call<z.ZodType>, binary: boolean) {
    const tokenOf = async () => (call.token !== undefined ? call.token : await opts.getToken?.());
    let res = await exchange(call, call.auth ? await tokenOf() : null, binary);
    if (res.status === 401 && call.auth && opts.onUnauthorized) {
      const error = apiError(res.status, res.headers, res.json);
      if (SESSION_CODES.has(error.code)) {
        if ((await opts.onUnauthorized(error)) !== true) throw error;
        // The token the handler obtained: a per-call token is stale by definition here.
        res = await exchange(call, await opts.getToken?.(), binary);
      }
    }
    if (res.status < 200 || res.status >= 300) throw apiError(res.status, res.headers, res.json);
    return res;
  }

  return {
    /** Runs a call whose success is bytes (a download); errors are the same typed errors. */
    async sendBinary(call: Call<z.ZodType>): Promise<BinaryResult> {
      const res = await authorized(call, true);
      return { status: res.status, contentType: res.headers.get('content-type'), contentRange: res.headers.get('content-range'), bytes: res.bytes ?? new Uint8Array() };
    },

    /** Runs the call and answers its validated success body, or throws a typed error. */
    async send<S extends z.ZodType>(call: Call<S>): Promise<z.output<S>> {
      const res = await authorized(call, false);
      if (res.json === undefined) throw new UnexpectedResponseError(`${call.method} ${call.path}: HTTP ${res.status} without a JSON body`, res.status);
      const parsed = call.response.safeParse(res.json);
      if (!parsed.success) {
        const issues = parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
        throw new UnexpectedResponseError(
          `${call.method} ${call.path}: the response does not match the API schema (${issues.map((i) => i.path || '(body)').join(', ')})`,
          res.status,
          issues,
        );
      }
      return parsed.data;
    },
  };
}

export type Transport = ReturnType<typeof createTransport>;
