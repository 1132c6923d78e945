/**
 * Telling "the database is away" from every other failure, and asking whether it is back.
 *
 * postgres.js reports a lost or refused connection with its own codes (CONNECTION_CLOSED,
 * CONNECT_TIMEOUT, …) or the socket's errno (ECONNRESET, ECONNREFUSED, …), and PostgreSQL
 * itself with SQLSTATE class 08 or 57P01–57P03 while it shuts down or starts. Any of these
 * means "try again shortly" (503), not a server bug (500). An errno alone is ambiguous (an
 * outside service can reset a socket too), so it counts only when the error came from a
 * query (drizzle's wrapper, or postgres.js's `query` tag on a socket error, e.g. at `begin`).
 */
import { DrizzleQueryError } from 'drizzle-orm';
import pg from 'pg';

const DRIVER_CODES = new Set(['CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', 'DATABASE_UNREACHABLE']);
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections. */
const SERVER_STATES = new Set(['57P01', '57P02', '57P03', '53300']);

/** True when `err` (or what it wraps) says the database cannot be reached right now. */
export function isDatabaseUnreachable(err: unknown): boolean {
  let fromQuery = false;
  let socketCode = false;
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    // drizzle wraps a query's error; postgres.js tags a socket error with the query it failed.
    if (e instanceof DrizzleQueryError || typeof (e as { query?: unknown }).query === 'string') fromQuery = true;
    const code = (e as { code?: unknown }).code;
    if (typeof code !== 'string') continue;
    if (DRIVER_CODES.has(code) || SERVER_STATES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
    if (SOCKET_CODES.has(code)) socketCode = true;
  }
  return socketCode && fromQuery;
}

/** The error a probe rejects with when the database did not answer in time. */
export class DatabaseUnreachableError extends Error {
  readonly code = 'DATABASE_UNREACHABLE';
  constructor(timeoutMs: number) {
    super(`The database did not answer within ${timeoutMs} ms`);
  }
}

/**
 * How long the API's gate waits for a fresh connection to answer before it calls the database
 * away. A database that is down refuses at once; this bound is for one that does not answer at
 * all. At 1 s a healthy PostgreSQL on a loaded machine (a backend forked for the probe) missed
 * it and a sign-in was answered 503: the gate only asks after a request has been slow for
 * 2.5 s, so waiting longer costs nothing in the common case.
 */
export const PROBE_TIMEOUT_MS = 3000;

/**
 * `select 1` on a connection of its own, opened for the call and closed after, within
 * `timeoutMs`. Not through the application pool: a pool that is busy (heavy load) or stuck
 * retrying a lost connection (postgres.js retries a query's first connection without end)
 * would make a healthy database look away, or a probe hang. node-postgres rather than a
 * throwaway postgres.js client: its client ends cleanly mid-connect, with errors as events.
 */
export async function probePostgres(url: string, timeoutMs: number): Promise<void> {
  // A database that is down refuses or drops at once. A silent one is asked twice: starved of
  // CPU (two cores, a browser and the tests' servers beside it), a healthy PostgreSQL once
  // missed a single bound and the API answered 503 mid-test.
  for (let attempt = 0; ; attempt++) {
    try {
      return await probeOnce(url, timeoutMs);
    } catch (err) {
      if (!(err instanceof DatabaseUnreachableError) || attempt >= 1) throw err;
    }
  }
}

async function probeOnce(url: string, timeoutMs: number): Promise<void> {
  // The driver's own connect timeout only cleans up a silent socket: set past every extension
  // `withinMs` may grant, since its timer too fires late after a blocked event loop and would
  // otherwise win the race that `withinMs` judges with that in mind.
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: timeoutMs * (MAX_EXTENSIONS + 2),
    application_name: 'fieldchart-probe',
  });
  client.on('error', () => {});
  let answered = false;
  try {
    await withinMs(
      client.connect().then(() => client.query('select 1')),
      timeoutMs,
    );
    answered = true;
  } finally {
    // A silent peer's socket is closed by that timeout later; the verdict need not wait for it.
    const ended = client.end().catch(() => {});
    if (answered) await ended;
  }
}

/** How many times a bound that a blocked event loop overran is granted again. */
const MAX_EXTENSIONS = 2;

/** `work`, or a DatabaseUnreachableError once `timeoutMs` have passed without an answer. */
export async function withinMs<T>(work: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let settled = false;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        // The bound is of time the process could have heard the answer in. A client test
        // runs the device's PGlite (seconds of WASM on this thread) beside the server: a timer
        // that fires late fired for the block, not the database, and the answer may be waiting
        // in the poll phase that runs after timers. So a late timer waits once more, and any
        // timer looks past the poll phase (setImmediate) before it calls the database away.
        let extensions = 0;
        const arm = () => {
          const due = performance.now() + timeoutMs;
          timer = setTimeout(() => {
            const lateMs = performance.now() - due;
            setImmediate(() => {
              if (settled) return;
              if (lateMs > Math.min(250, timeoutMs / 4) && extensions++ < MAX_EXTENSIONS) arm();
              else reject(new DatabaseUnreachableError(timeoutMs));
            });
          }, timeoutMs);
        };
        arm();
      }),
    ]);
  } finally {
    settled = true;
    clearTimeout(timer);
  }
}
