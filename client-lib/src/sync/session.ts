/**
 * The session: the device's credentials (stored in `meta`, so they survive restarts), their
 * refresh over REST — one at a time, with an Idempotency-Key kept until the answer is stored —
 * the in-band refresh of the open socket before the token expires, and the REST client that
 * uses them. The role of powersync's connector: the engine asks it for a token and tells it
 * when the server refused one; only the session talks to the server about tokens.
 *
 * It also holds the rule about whose data the device holds (one clinician's at a time), used
 * alike when someone signs in and when the server names the user in `welcome`.
 */
import { createRestClient, FieldchartApiError, newIdempotencyKey, type FetchLike, type RestClient } from '../rest/index.ts';
import { failureCode } from '../storage/storage-errors.ts';
import { clearDrafts, unconfirmedDrafts } from '../storage/draft-store.ts';
import { clearFeed } from '../storage/feed-store.ts';
import type { LocalDb, Queryable } from '../storage/local-db.ts';
import { deleteMeta, getMeta, setMeta, type StoredSession } from '../storage/meta.ts';
import { clearOutbox, failureCount, pendingCount } from '../storage/outbox.ts';
import { clearDictations, unsentDictationCount } from '../storage/dictation-store.ts';
import { Backoff } from './backoff.ts';
import type { StatusStore } from './status.ts';

/** A token this close to its expiry is refreshed before a socket is opened with it. */
const EXPIRY_MARGIN_MS = 5_000;

export interface SessionOptions {
  readonly db: LocalDb;
  readonly status: StatusStore;
  readonly baseUrl: string;
  readonly fetch?: FetchLike;
  /** How long before the access token expires to refresh it (ms); default: a fifth of its life, 5 s to 60 s. */
  readonly refreshLeadMs?: number;
  /**
   * The refresh token was refused: the session is over (the engine stops syncing) —
   * `device_revoked` when it ended with this device's revocation (the device must wipe).
   */
  readonly onEnded: (reason: 'unauthorized' | 'device_revoked') => Promise<void>;
}

export class Session {
  /** The REST client, authenticated with this session and refreshing it on a 401. */
  readonly rest: RestClient;
  private stored: StoredSession | null = null;
  private refreshing: Promise<void> | null = null;
  /** The server refused the access token (4401): refresh before the next socket. */
  private refused = false;
  private inBandTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly inBandBackoff = new Backoff({ initialMs: 1000, maxMs: 60_000 });

  constructor(private readonly opts: SessionOptions) {
    this.rest = createRestClient({
      baseUrl: opts.baseUrl,
      ...(opts.fetch ? { fetch: opts.fetch } : {}),
      getToken: () => this.stored?.token ?? null,
      onUnauthorized: async () => {
        if (!this.stored) return false;
        await this.refresh();
        return true;
      },
    });
  }

  get current(): StoredSession | null {
    return this.stored;
  }

  /** Reads the stored session (app start). */
  async load(): Promise<StoredSession | null> {
    this.stored = await getMeta(this.opts.db, 'session');
    return this.stored;
  }

  /** Stores a new session (sign-in). */
  async begin(session: StoredSession): Promise<void> {
    await setMeta(this.opts.db, 'session', session);
    this.stored = session;
    this.refused = false;
  }

  /** Forgets the session (sign-out, or the server ended it). */
  async forget(): Promise<void> {
    this.stopKeepingFresh();
    this.stored = null;
    await deleteMeta(this.opts.db, 'session');
  }

  /** The server named the session's user (a session begun from tokens names none until then). */
  async adoptUser(userId: string): Promise<void> {
    if (!this.stored || this.stored.user_id === userId) return;
    this.stored = { ...this.stored, user_id: userId };
    await setMeta(this.opts.db, 'session', this.stored);
  }

  /** The server refused the access token: the next socket needs a fresh one. */
  markRefused(): void {
    this.refused = true;
  }

  /** A token to say hello with: refreshed first if it was refused or is about to expire. */
  async tokenForHello(): Promise<string | null> {
    const s = this.stored;
    if (!s) return null;
    if (this.refused || s.expires_at - Date.now() < EXPIRY_MARGIN_MS) await this.refresh();
    return this.stored?.token ?? null;
  }

  /**
   * Keeps the open socket's token fresh: shortly before `expiresAtIso`, a new pair over REST,
   * then `sendToken` on the same socket (no reconnect). Offline or with the server down it
   * tries again with backoff; at expiry the server closes with 4401.
   */
  keepFresh(expiresAtIso: string, sendToken: (token: string) => void): void {
    this.stopKeepingFresh();
    this.refused = false;
    const life = Date.parse(expiresAtIso) - Date.now();
    const lead = this.opts.refreshLeadMs ?? Math.min(60_000, Math.max(5_000, life / 5));
    const attempt = async (): Promise<void> => {
      this.inBandTimer = null;
      try {
        await this.refresh();
        this.inBandBackoff.reset();
        const token = this.stored?.token;
        if (token) sendToken(token);
      } catch {
        if (!this.stored) return;
        this.inBandTimer = setTimeout(() => void attempt(), this.inBandBackoff.next());
      }
    };
    this.inBandTimer = setTimeout(() => void attempt(), Math.max(0, life - lead));
  }

  stopKeepingFresh(): void {
    if (this.inBandTimer) clearTimeout(this.inBandTimer);
    this.inBandTimer = null;
  }

  /** Refreshes the stored session (one refresh at a time). A refused refresh token ends the session. */
  refresh(): Promise<void> {
    this.refreshing ??= this.refreshOnce().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async refreshOnce(): Promise<void> {
    const db = this.opts.db;
    const session = this.stored;
    if (!session) throw new Error('not signed in');
    try {
      const kept = await getMeta(db, 'refresh_attempt');
      const attempt = kept?.refresh_token === session.refresh_token ? kept : { refresh_token: session.refresh_token, key: newIdempotencyKey() };
      if (attempt !== kept) await setMeta(db, 'refresh_attempt', attempt);
      const pair = await this.rest.refresh({ refresh_token: session.refresh_token }, { idempotencyKey: attempt.key });
      if (this.stored !== session) return; // signed out or in again meanwhile
      const next: StoredSession = { ...session, token: pair.token, refresh_token: pair.refresh_token, expires_at: Date.now() + pair.expires_in * 1000 };
      await db.transaction(async (tx) => {
        await setMeta(tx, 'session', next);
        await deleteMeta(tx, 'refresh_attempt');
      });
      this.stored = next;
      this.refused = false;
    } catch (err) {
      // 409: the same refresh is still being answered (idempotency): not the end of the session.
      if (err instanceof FieldchartApiError && err.code === 'device_revoked') {
        // A device offline when it was revoked refreshes its token before its next hello:
        // this refusal is then the first it hears of it, and it must wipe as on 4411.
        this.opts.status.fail('device_revoked', 'this device was revoked');
        await this.opts.onEnded('device_revoked');
      } else if (err instanceof FieldchartApiError && err.status >= 400 && err.status < 500 && err.status !== 429 && err.status !== 409) {
        this.opts.status.fail('unauthorized', `the session is over (${err.code}): sign in again`);
        await this.opts.onEnded('unauthorized');
      } else {
        this.opts.status.fail(failureCode(err, 'refresh_failed'), err instanceof Error ? err.message : String(err));
      }
      throw err;
    }
  }
}

/** Work that exists only on this device: queued writes, parked ones and unconfirmed draft edits. */
export async function unsyncedWork(db: Queryable): Promise<{ writes: number; drafts: number }> {
  // A dictation whose audio is only here counts as a write: signing out must not lose it unasked.
  const writes = (await pendingCount(db)) + (await failureCount(db)) + (await unsentDictationCount(db));
  const drafts = (await unconfirmedDrafts(db)).length;
  return { writes, drafts };
}

/**
 * Whose data the device holds, for `userId` about to use it: the same user, nobody yet, or
 * another clinician — whose rows may go, unless work of theirs exists only here (it must never
 * be uploaded as someone else).
 */
export async function deviceOwnerFor(
  db: Queryable,
  userId: string,
): Promise<{ kind: 'same' | 'none' | 'other' } | { kind: 'other_unsynced'; writes: number; drafts: number }> {
  const known = await getMeta(db, 'user_id');
  if (known === null) return { kind: 'none' };
  if (known === userId) return { kind: 'same' };
  const work = await unsyncedWork(db);
  return work.writes > 0 || work.drafts > 0 ? { kind: 'other_unsynced', ...work } : { kind: 'other' };
}

/**
 * On `welcome` (the server names the user): make the device `userId`'s. Another clinician's
 * rows go (`restart`: the feed must start over for this user), unless work of theirs exists
 * only here (`blocked`: it must never be uploaded as someone else).
 */
export async function claimDevice(db: LocalDb, userId: string): Promise<{ kind: 'ok' | 'restart' } | { kind: 'blocked'; writes: number; drafts: number }> {
  const owner = await deviceOwnerFor(db, userId);
  if (owner.kind === 'other_unsynced') return { kind: 'blocked', writes: owner.writes, drafts: owner.drafts };
  if (owner.kind === 'other') {
    await clearUserData(db, userId);
    return { kind: 'restart' };
  }
  if (owner.kind === 'none') await setMeta(db, 'user_id', userId);
  return { kind: 'ok' };
}

/**
 * Removes a user's data from the device (rows, outbox, drafts), naming `nextUser` as the owner,
 * then replaces the device key: what the deleted rows left in the files (dead rows, WAL) was
 * sealed with the old key, which no longer exists.
 */
export async function clearUserData(db: LocalDb, nextUser: string | null): Promise<void> {
  await db.transaction(async (tx) => {
    await clearFeed(tx);
    await clearOutbox(tx);
    await clearDrafts(tx);
    await clearDictations(tx);
    if (nextUser === null) await deleteMeta(tx, 'user_id');
    else await setMeta(tx, 'user_id', nextUser);
  });
  await db.rotateKey();
}
