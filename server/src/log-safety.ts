/**
 * What an error may put in a log. Driver and ORM messages can quote the values a statement
 * carried (drizzle's "Failed query … params: …", PostgreSQL's `detail`, "invalid input syntax
 * for type uuid: "…""), and those values can be PHI. So a logged error keeps its type,
 * SQLSTATE, constraint and the parameterised SQL, never parameter values or driver text.
 */
export interface SafeError {
  readonly type: string;
  readonly code?: string;
  readonly constraint?: string;
  readonly query?: string;
  readonly message?: string;
  readonly stack?: string;
}

const EMAIL = /[^\s@<>"']+@[^\s@<>"']+\.[^\s@<>"']+/g;

/** Masks email addresses and anything quoted in a free-text message. */
export function redactText(text: string): string {
  return text
    .replace(/params:[\s\S]*$/i, 'params: [redacted]')
    .replace(EMAIL, '[email]')
    .replace(/"[^"]*"/g, '"…"')
    .slice(0, 500);
}

function stackFrames(stack: string | undefined): string | undefined {
  // A stack starts with the message, which may span lines; keep only the frames.
  const frames = stack?.split('\n').filter((l) => /^\s+at /.test(l)).slice(0, 12);
  return frames?.length ? frames.join('\n') : undefined;
}

export function safeError(err: unknown): SafeError {
  if (!(err instanceof Error)) return { type: typeof err };
  const cause = (err as { cause?: unknown }).cause;
  const query = (err as { query?: unknown }).query;
  if (typeof query === 'string') {
    const db = (cause ?? {}) as { code?: unknown; constraint?: unknown; constraint_name?: unknown; name?: unknown };
    const constraint = db.constraint ?? db.constraint_name;
    return {
      type: typeof db.name === 'string' ? db.name : err.name,
      ...(typeof db.code === 'string' ? { code: db.code } : {}),
      ...(typeof constraint === 'string' ? { constraint } : {}),
      query: query.slice(0, 500),
      ...(stackFrames(err.stack) ? { stack: stackFrames(err.stack) } : {}),
    };
  }
  const code = (err as { code?: unknown }).code;
  const sqlState = typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
  return {
    type: err.name,
    ...(typeof code === 'string' ? { code } : {}),
    // A driver error's message can quote values; an application error's is ours.
    message: sqlState ? '[database error]' : redactText(err.message),
    ...(stackFrames(err.stack) ? { stack: stackFrames(err.stack) } : {}),
  };
}
