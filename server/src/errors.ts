/**
 * The typed errors thrown anywhere in the server. One error handler (http/error-handler.ts)
 * turns them into the contract's body; nothing else writes an error response.
 */
export type FieldErrors = Record<string, string[]>;

export abstract class AppError extends Error {
  abstract readonly statusCode: number;
  readonly code: string;
  readonly headers: Record<string, string>;
  /**
   * Already logged where it was found: the error handler logs a refusal of 500 and above with
   * its cause, except one whose finder logged it once (the database gate, for every request).
   */
  readonly loggedWhereFound: boolean = false;
  constructor(message: string, code: string, headers: Record<string, string> = {}) {
    super(message);
    this.code = code;
    this.headers = headers;
  }
}

export class BadRequest extends AppError {
  readonly statusCode = 400;
  constructor(message = 'Bad request', code = 'bad_request') {
    super(message, code);
  }
}

export class Unauthorized extends AppError {
  readonly statusCode = 401;
  constructor(message = 'Unauthenticated', code = 'unauthorized') {
    super(message, code);
  }
}

export class Forbidden extends AppError {
  readonly statusCode = 403;
  constructor(message = 'Forbidden', code = 'forbidden') {
    super(message, code);
  }
}

export class NotFound extends AppError {
  readonly statusCode = 404;
  constructor(message = 'Not found', code = 'not_found') {
    super(message, code);
  }
}

export class Conflict extends AppError {
  readonly statusCode = 409;
  constructor(message: string, code = 'conflict') {
    super(message, code);
  }
}

export class TooLarge extends AppError {
  readonly statusCode = 413;
  constructor(message = 'Payload too large', code = 'payload_too_large') {
    super(message, code);
  }
}

export class Invalid extends AppError {
  readonly statusCode = 422;
  readonly errors: FieldErrors;
  constructor(message: string, errors: FieldErrors = {}, code = 'validation_failed') {
    super(message, code);
    this.errors = errors;
  }
  /** A 422 about a single field, the common case. */
  static field(field: string, message: string, code = 'validation_failed'): Invalid {
    return new Invalid(message, { [field]: [message] }, code);
  }
}

export class TooMany extends AppError {
  readonly statusCode = 429;
  constructor(message: string, retryAfterSeconds: number, code = 'too_many_requests') {
    super(message, code, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) });
  }
}

export class Unavailable extends AppError {
  readonly statusCode = 503;
  constructor(message = 'Service unavailable', code = 'unavailable', headers: Record<string, string> = {}) {
    super(message, code, headers);
  }
}

/** The database cannot be reached right now (PostgreSQL restarting, the network to it down). */
export class DatabaseUnavailable extends Unavailable {
  override readonly loggedWhereFound = true;
  constructor() {
    super('The database is unreachable right now; try again shortly', 'database_unavailable', { 'retry-after': '2' });
  }
}
