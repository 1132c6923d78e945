/**
 * What the offline client's own calls throw (besides the REST errors of sign-in): typed, so an
 * app can tell "you still have unsynced work" from "that input is invalid".
 */
import { FieldchartClientError, type FieldErrors } from '../rest/errors.ts';

/** `signOut()` (or signing in as someone else) while writes exist only on this device. */
export class OutboxNotEmptyError extends FieldchartClientError {
  override readonly name = 'OutboxNotEmptyError';
  readonly code = 'outbox_not_empty';
  /** Outbox entries the server has not acknowledged, and writes it parked as failed. */
  readonly pending: number;
  /** Drafts with edits the server is not known to have. */
  readonly unsyncedDrafts: number;

  constructor(pending: number, unsyncedDrafts: number) {
    super(`${pending} change(s) and ${unsyncedDrafts} draft(s) exist only on this device; sync first, or sign out with { force: true } to discard them`);
    this.pending = pending;
    this.unsyncedDrafts = unsyncedDrafts;
  }
}

/** A write whose input breaks the contract (checked on the device, before it is queued). */
export class InvalidWriteError extends FieldchartClientError {
  override readonly name = 'InvalidWriteError';
  /** `validation_failed`, or a rule's code such as `invalid_timer_sequence`. */
  readonly code: string;
  readonly fieldErrors: FieldErrors;

  constructor(message: string, fieldErrors: FieldErrors, code = 'validation_failed') {
    super(message);
    this.code = code;
    this.fieldErrors = fieldErrors;
  }
}

/** A write about a visit or patient this device does not have. */
export class LocalNotFoundError extends FieldchartClientError {
  override readonly name = 'LocalNotFoundError';
  readonly code: string;

  constructor(message: string, code: string) {
    super(message);
    this.code = code;
  }
}

/** A call that needs a signed-in user, made while signed out. */
export class NotSignedInError extends FieldchartClientError {
  override readonly name = 'NotSignedInError';
  readonly code = 'not_signed_in';

  constructor() {
    super('Sign in first');
  }
}

/** `visits.planDay` cannot plan the day: too few placed visits, too many, or a plan past midnight. */
export class PlanDayError extends FieldchartClientError {
  override readonly name = 'PlanDayError';
  /** The server's 422 codes: `too_few_geocodable_visits`, `too_many_visits`, `day_overflow`. */
  readonly code: string;

  constructor(message: string, code: string) {
    super(message);
    this.code = code;
  }
}
