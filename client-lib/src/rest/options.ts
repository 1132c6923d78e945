/** Options and result shapes shared by every area of the REST client. */

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

/** Options of a read that needs a session (GET, and DELETE, which takes no idempotency key). */
export type ReadOptions = RequestOptions & AuthenticatedOptions;
/** Options of a change that needs a session (POST/PUT). */
export type AuthWriteOptions = WriteOptions & AuthenticatedOptions;

/** What endpoints without response data answer: the server's message. */
export interface MessageResult {
  readonly message: string;
}

/** `meta` of a paginated list. */
export interface PaginationMeta {
  readonly current_page: number;
  readonly per_page: number;
  readonly total: number;
  readonly last_page: number;
}

/** One page of a paginated list: the items and where they sit in the whole. */
export interface Page<T> {
  readonly data: T[];
  readonly meta: PaginationMeta;
}

/**
 * A fresh random key for {@link WriteOptions.idempotencyKey}. Keep it with the pending change
 * (e.g. in the outbox) so that every retry sends the same one.
 */
export function newIdempotencyKey(): string {
  return globalThis.crypto.randomUUID();
}
