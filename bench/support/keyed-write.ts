/**
 * A write as a device makes it when the server may die under it: one Idempotency-Key for the
 * logical write, the same request again on no answer (the process died), a 5xx (503 while a
 * restarting node opens its database) or a 409 `idempotency_in_progress` (the first try's
 * claim is unfinished), until a 2xx, a refusal (another 4xx) or the retry budget runs out.
 *
 * A claim left unfinished by a killed node answers 409 for 120 s (services/idempotency.ts
 * ABANDONED_AFTER_MS); only then does a retry run again. A budget under that gives up on such
 * a write; the write then counts as unacknowledged, whether or not it committed.
 */
import { randomUUID } from 'node:crypto';

export interface Attempt {
  readonly label: string;
  /** performance.now() when sent. */
  readonly at: number;
  readonly ms: number;
  /** 0: no answer. */
  readonly status: number;
}

export interface WriteResult<T> {
  readonly status: number;
  readonly body: T;
  readonly attempts: number;
  /** True when a 2xx came back. */
  readonly acknowledged: boolean;
}

export async function keyedWrite<T = any>(opts: {
  readonly url: string;
  readonly label: string;
  readonly method: 'POST' | 'PUT';
  /** Empty: no Authorization header (sign-up). */
  readonly token: string;
  /** JSON, or a function that builds the same multipart body for each try. */
  readonly body: unknown;
  readonly form?: () => FormData;
  readonly retryForMs: number;
  readonly onAttempt?: (a: Attempt) => void;
}): Promise<WriteResult<T>> {
  const key = randomUUID();
  const giveUpAt = performance.now() + opts.retryForMs;
  let attempts = 0;
  for (;;) {
    attempts++;
    const at = performance.now();
    let status = 0;
    let body: unknown = null;
    try {
      const headers: Record<string, string> = { accept: 'application/json', 'idempotency-key': key };
      if (opts.token) headers.authorization = `Bearer ${opts.token}`;
      let payload: string | FormData | undefined;
      if (opts.form) payload = opts.form();
      else if (opts.body !== undefined) {
        headers['content-type'] = 'application/json';
        payload = JSON.stringify(opts.body);
      }
      const res = await fetch(opts.url, { method: opts.method, headers, ...(payload !== undefined ? { body: payload } : {}), signal: AbortSignal.timeout(60_000) });
      status = res.status;
      const text = await res.text();
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        body = text;
      }
    } catch {
      status = 0;
    }
    opts.onAttempt?.({ label: opts.label, at, ms: performance.now() - at, status });
    if (status >= 200 && status < 300) return { status, body: body as T, attempts, acknowledged: true };
    const retryable = status === 0 || status >= 500 || (status === 409 && (body as { code?: string } | null)?.code === 'idempotency_in_progress');
    if (!retryable || performance.now() > giveUpAt) return { status, body: body as T, attempts, acknowledged: false };
    await new Promise((r) => setTimeout(r, 200 + Math.random() * 600));
  }
}
