/**
 * Zod issues as the contract's field errors (`{ "a.b": ["message", …] }`): HTTP bodies, sync
 * mutations and the device's own check of a write use the same key rule.
 */

/** The part of a zod issue this needs (structural, so no zod version is tied in). */
export interface IssueLike {
  readonly path: readonly PropertyKey[];
  readonly message: string;
  readonly code?: string;
  readonly input?: unknown;
}

export type FieldErrorMap = Record<string, string[]>;

export interface FieldErrorOptions {
  /** The key of an issue about the whole value (empty path). */
  readonly root: string;
  /** Say "is required" for a missing field instead of zod's type message. */
  readonly requiredMessage?: boolean;
}

export function fieldErrorsFromIssues(issues: readonly IssueLike[], options: FieldErrorOptions): FieldErrorMap {
  const out: FieldErrorMap = {};
  for (const issue of issues) {
    const key = issue.path.map(String).join('.') || options.root;
    const missing = options.requiredMessage === true && issue.code === 'invalid_type' && issue.input === undefined;
    (out[key] ??= []).push(missing ? 'is required' : issue.message);
  }
  return out;
}
