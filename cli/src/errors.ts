/**
 * Exit codes: 0 success; 1 the operation failed (unknown user, no such mail, database error);
 * 2 bad usage or arguments; 75 the data dir is held by a server that does not answer;
 * 78 invalid configuration (the same code `npm start` uses).
 */
export const EXIT = { ok: 0, failed: 1, usage: 2, busy: 75, config: 78 } as const;

/** A failure the CLI reports as one line on stderr and an exit code, never a stack trace. */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    message: string,
    readonly code: string,
    readonly exitCode: number = EXIT.failed,
  ) {
    super(message);
  }
}
