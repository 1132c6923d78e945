/**
 * What a REST call can throw. Three causes, three classes, one base: the server said no
 * ({@link FieldchartApiError}), the server could not be reached ({@link NetworkError}), or it
 * answered something outside the contract ({@link UnexpectedResponseError}). A caller's own
 * abort is not wrapped: the signal's reason (an `AbortError`) is rethrown as is.
 *
 * Messages never quote a response body: bodies may carry patient data.
 */

/** Field name → messages, as in the contract's 422 body (`errors`). */
export type FieldErrors = Record<string, string[]>;

/** Base class of every error the Fieldchart client throws. */
export class FieldchartClientError extends Error {
  override readonly name: string = 'FieldchartClientError';
}

/**
 * The server answered with an error status. For contract error bodies
 * (`{"status": false, "message", "code", "errors"?}`) the members are copied from the body;
 * for anything else (a proxy's HTML page, say) `code` is `unexpected_response`.
 */
export class FieldchartApiError extends FieldchartClientError {
  override readonly name = 'FieldchartApiError';
  /** HTTP status code (401, 404, 422, 429, …). */
  readonly status: number;
  /** The contract's snake_case reason, e.g. `invalid_credentials`, `validation_failed`. */
  readonly code: string;
  /** Per-field messages; empty unless the server sent `errors` (422). */
  readonly fieldErrors: FieldErrors;
  /** Seconds to wait before retrying, from `Retry-After` (429), when the server sent one. */
  readonly retryAfterSeconds: number | null;

  constructor(init: { status: number; code: string; message: string; fieldErrors?: FieldErrors; retryAfterSeconds?: number | null }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.fieldErrors = init.fieldErrors ?? {};
    this.retryAfterSeconds = init.retryAfterSeconds ?? null;
  }
}

/**
 * The request did not complete: DNS, refused or dropped connection, TLS failure, offline,
 * or the client's timeout. Whether a write reached the server is unknown; retry it with the
 * same idempotency key.
 */
export class NetworkError extends FieldchartClientError {
  override readonly name = 'NetworkError';
  /** True when the client's own `timeoutMs` ran out. */
  readonly timedOut: boolean;

  constructor(message: string, options: { cause?: unknown; timedOut?: boolean } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.timedOut = options.timedOut ?? false;
  }
}

/** One mismatch between a response and its schema: where, and what was expected. */
export interface ResponseIssue {
  readonly path: string;
  readonly message: string;
}

/**
 * A success status whose body is not JSON or does not match the endpoint's schema: the
 * server and this client disagree on the contract (usually a version mismatch).
 */
export class UnexpectedResponseError extends FieldchartClientError {
  override readonly name = 'UnexpectedResponseError';
  readonly status: number;
  /** The schema mismatches; empty when the body was not JSON at all. */
  readonly issues: readonly ResponseIssue[];

  constructor(message: string, status: number, issues: readonly ResponseIssue[] = []) {
    super(message);
    this.status = status;
    this.issues = issues;
  }
}
