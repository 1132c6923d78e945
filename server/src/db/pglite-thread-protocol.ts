/**
 * The messages between the main thread (pglite-thread-client.ts) and the thread that owns
 * PGlite (pglite-thread.ts). Only structured-cloneable data crosses: a query's type parsers
 * (functions) travel as the list of their type oids, for which the thread answers raw text, and
 * the main thread applies the functions; errors travel as their fields and are rebuilt.
 */
import { protocol, TransactionAbortedError } from '@electric-sql/pglite';

export interface ThreadInit {
  readonly dataDir: string;
  /** A data-dir archive (PGlite's `loadDataDir`), transferred rather than copied. */
  readonly loadDataDir?: ArrayBuffer;
  /** PostgreSQL's `shared_buffers` (`16MB`); PGlite's own (128 MB) where absent. */
  readonly sharedBuffers?: string;
  /** PGlite's WebAssembly and file-system bundle, read and compiled once by the opening process (pglite-assets.ts). */
  readonly assets: PgliteAssets;
}

/** What PGlite would otherwise read and compile again in every thread. */
export interface PgliteAssets {
  readonly pgliteWasmModule: WebAssembly.Module;
  readonly initdbWasmModule: WebAssembly.Module;
  /** `pglite.data`: each thread gets its own copy (6 MB). */
  readonly fsBundle: ArrayBuffer;
}

interface QueryShape {
  readonly tx?: number;
  readonly sql: string;
  readonly rowMode?: 'array' | 'object';
  /** Oids whose values come back as the raw text (the caller's parsers for them run on the main thread). */
  readonly rawTypes?: readonly number[];
}

export type ThreadRequest =
  | ({ readonly op: 'query'; readonly params: readonly unknown[]; readonly paramTypes?: readonly number[]; readonly rawParams?: boolean } & QueryShape)
  | ({ readonly op: 'exec' } & QueryShape)
  | { readonly op: 'begin'; readonly tx: number }
  | { readonly op: 'end'; readonly tx: number; readonly commit: boolean }
  | { readonly op: 'rollback'; readonly tx: number }
  | { readonly op: 'listen'; readonly tx?: number; readonly channel: string; readonly listener: number }
  | { readonly op: 'unlisten'; readonly tx?: number; readonly channel: string; readonly listeners: readonly number[] }
  | { readonly op: 'dump'; readonly compression: 'auto' | 'gzip' | 'none' }
  | { readonly op: 'statements' }
  | { readonly op: 'close' };

export type Envelope = ThreadRequest & { readonly id: number };

export interface SerializedError {
  readonly kind: 'database' | 'aborted' | 'plain';
  readonly message: string;
  readonly stack?: string;
  /** The error's own fields (code, severity, detail, …) that survived a structured clone. */
  readonly fields: Record<string, unknown>;
}

export type ThreadMessage =
  | { readonly ready: true; readonly parserTypes: readonly string[] }
  | { readonly failed: SerializedError }
  | { readonly id: number; readonly ok: true; readonly value: unknown }
  | { readonly id: number; readonly ok: false; readonly error: SerializedError }
  /** Notifications that reached listeners together (a statement's, in order): `[listener, payload]` each. */
  | { readonly notify: ReadonlyArray<readonly [number, string]> };

export function serializeError(err: unknown): SerializedError {
  if (!(err instanceof Error)) return { kind: 'plain', message: String(err), fields: {} };
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(err)) {
    // queryOptions holds the caller's parsers (functions); anything else that cannot be cloned goes too.
    if (key === 'queryOptions' || typeof value === 'function') continue;
    try {
      fields[key] = structuredClone(value);
    } catch {
      /* not cloneable: left out */
    }
  }
  const kind = err instanceof TransactionAbortedError ? 'aborted' : err instanceof protocol.messages.DatabaseError ? 'database' : 'plain';
  return { kind, message: err.message, ...(err.stack ? { stack: err.stack } : {}), fields };
}

/** The error as the caller would have had it from PGlite in its own thread (same class, same fields). */
export function deserializeError(e: SerializedError): Error {
  const err =
    e.kind === 'aborted'
      ? new TransactionAbortedError()
      : e.kind === 'database'
        ? new protocol.messages.DatabaseError(e.message, 0, 'error')
        : new Error(e.message);
  Object.assign(err, e.fields);
  // The caller's own stack (this thread's) says where the query came from; the thread's is kept beside it.
  if (e.stack) Object.defineProperty(err, 'threadStack', { value: e.stack, enumerable: false });
  return err;
}
