import { failureCode } from '../storage/storage-errors.ts';

/**
 * The sync state as one immutable snapshot, replaced (never mutated) on every change, so an
 * app can compare snapshots by identity and render from the latest.
 */

/** A failure the client met in the background; it is state, never an unhandled rejection. */
export interface SyncError {
  /** Snake_case reason: a close-code name (`unauthorized`, `superseded`…), `network`, `refresh_failed`, `bad_message`, `other_user_outbox`, `retry`, `storage_full` (the device storage: see StorageError)… */
  readonly code: string;
  readonly message: string;
  /** Device time, ISO 8601. */
  readonly at: string;
}

/** Where the device stands with the server. */
export interface SyncStatus {
  /** A session (tokens) is stored. */
  readonly signedIn: boolean;
  /** The socket is open and the server said `welcome`. */
  readonly connected: boolean;
  /** Mutations are in flight. */
  readonly uploading: boolean;
  /** Feed batches are arriving. */
  readonly downloading: boolean;
  /** The last `synced` came after everything else the server sent: the local rows are current. */
  readonly current: boolean;
  /** Outbox entries the server has not acknowledged. */
  readonly pending: number;
  /**
   * Writes the server parked after repeated unexpected errors (`failures.list()`): kept on the
   * device, out of the queue, waiting for the app to retry or dismiss them.
   */
  readonly failed: number;
  /** Server time of the last `synced` (kept across restarts), null before the first. */
  readonly lastSyncedAt: string | null;
  readonly lastError: SyncError | null;
  /**
   * Why the client stopped trying, when it did: `signed_out`, `unauthorized` (sign in again),
   * `account_disabled`, `device_revoked` (both: the device was wiped), `protocol_unsupported`
   * (update the app), `closed`. Null while it syncs or retries.
   */
  readonly halted: string | null;
}

export const INITIAL_STATUS: SyncStatus = {
  signedIn: false,
  connected: false,
  uploading: false,
  downloading: false,
  current: false,
  pending: 0,
  failed: 0,
  lastSyncedAt: null,
  lastError: null,
  halted: null,
};

/**
 * The one place the snapshot is replaced: the engine, the session and the uploader each patch
 * it, and a listener hears of a change once, whoever made it.
 */
export class StatusStore {
  private snapshot: SyncStatus = INITIAL_STATUS;

  constructor(private readonly onChange: (status: SyncStatus) => void) {}

  get value(): SyncStatus {
    return this.snapshot;
  }

  patch(patch: Partial<SyncStatus>): void {
    const next = { ...this.snapshot, ...patch };
    const changed = (Object.keys(next) as (keyof SyncStatus)[]).some((k) => next[k] !== this.snapshot[k]);
    if (!changed) return;
    this.snapshot = Object.freeze(next);
    this.onChange(this.snapshot);
  }

  /** A background failure, kept as the last error. */
  fail(code: string, message: string): void {
    this.patch({ lastError: { code, message, at: new Date().toISOString() } });
  }

  /** A background failure caught as `err`: the storage's code if it is one (storage-errors.ts), else `fallback`. */
  failWith(err: unknown, fallback: string): void {
    this.fail(failureCode(err, fallback), err instanceof Error ? err.message : String(err));
  }
}

/**
 * A status in one line for an error or a log: its flags, counts and error code, never a
 * message (a server's or a storage error's text may quote what the user wrote).
 */
export function describeStatus(s: SyncStatus): string {
  const flags = (['signedIn', 'connected', 'uploading', 'downloading', 'current'] as const).map((k) => `${k}=${s[k]}`);
  return [...flags, `pending=${s.pending}`, `failed=${s.failed}`, `lastError=${s.lastError?.code ?? 'none'}`, `halted=${s.halted ?? 'no'}`].join(' ');
}
