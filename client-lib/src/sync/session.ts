/**
 * The session: the device's credentials (stored in `meta`, so they survive restarts), their
 * refresh over REST — one at a time, with an Idempotency-Key kept until the answer is stored —
 * the in-band refresh of the open socket before the token expires, and the REST client that
 * uses them. The role of powersync's connector: the engine asks it for a token and tells it
 * when the server refused one; only the session talks to the server about tokens. Whose data
 * the device holds (and wiping it) is device-data.ts's.
 */
import { createRestClient, FieldchartApiError, newIdempotencyKey, type FetchLike, type RestClient } from '../rest/index.ts';
import { failureCode } from '../storage/storage-errors.ts';
import type { LocalDb } from '../storage/local-db.ts';
import { deleteMeta, getMeta, setMeta, type StoredSession } from '../storage/meta.ts';
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
   * `device_revoked` when it ended with this device's revocation, `account_disabled` when its
   * account was disabled (the device must wipe in both).
   */
  readonly onEnded: (reason: 'unauthorized' | 'device_revoked' | 'account_disabled') => Promise<void>;
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
      if (err instanceof FieldchartApiError && (err.code === 'device_revoked' || err.code === 'account_disabled')) {
        // A device offline when it was revoked (or its account disabled) refreshes its token
        // before its next hello: this refusal is then the first it hears of it, and it must
        // wipe as on 4411 (4403).
        const code = err.code;
        this.opts.status.fail(code, code === 'device_revoked' ? 'this device was revoked' : 'the account is disabled');
        await this.opts.onEnded(code);
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
