import { and, eq, isNull, ne, sql, type SQL } from 'drizzle-orm';
import { clinicianSettings, organizationMembers, refreshTokens, sessions, users } from '@fieldchart/schema/db';
import type { Db } from '../../db/database.ts';
import { runPrepared } from '../../db/one-statement.ts';
import { addSeconds, type Clock } from '../../clock.ts';
import { Unauthorized } from '../../errors.ts';
import type { AccessTokens } from '../../security/access-tokens.ts';
import { newOpaqueToken, sha256 } from '../../security/random-tokens.ts';
import { DEFAULT_TIME_ZONE } from '../clinician-settings.ts';
import { isUuid } from '../ids.ts';

export interface TokenPair {
  readonly token: string;
  readonly refresh_token: string;
  readonly expires_in: number;
}

export interface Principal {
  readonly userId: string;
  readonly sessionId: string;
}

/** An authenticated request's caller: the principal and the organization seat it sits in (null when solo). */
export interface Caller extends Principal {
  readonly seat: { readonly organizationId: string; readonly role: 'member' | 'admin' } | null;
  /** The clinician's time zone (their settings, or the default): what "today" is for them. */
  readonly timeZone: string;
  /** The route's `SessionExtra`, as selected with the check (null when the route names none). */
  readonly extra: unknown;
}

/**
 * A route's own facts, selected beside the session check over its row of `users`, so that a
 * route answering from the caller's own rows (GET /my-profile) costs one statement in all.
 */
export interface SessionExtra {
  /** The statement's name on PostgreSQL: one prepared statement per extra. */
  readonly name: string;
  readonly column: SQL;
}

/**
 * Sessions are token families. The access JWT names its session; every request checks that
 * the session is live and the user enabled, which is what makes logout and revocation real.
 */
/** Longer strings are refused without a lookup (issued tokens are far shorter). */
const MAX_REFRESH_TOKEN_CHARS = 512;

/**
 * `sessions.revoked_reason` of the sessions a device used when an operator revoked the device
 * (`fieldchart device revoke`): their tokens are then refused as `device_revoked`, so the
 * device learns to wipe itself rather than just sign in again.
 */
export const DEVICE_REVOKED = 'device_revoked';

/** The refusal of a token or refresh token whose session ended with its device. */
const deviceRevoked = () => new Unauthorized('This device was revoked', DEVICE_REVOKED);

/**
 * `sessions.revoked_reason` of the sessions ended by disabling their account (`fieldchart user
 * disable`). While the account stays disabled, their tokens are refused as `account_disabled`,
 * not as an unknown token: a device offline at the time hears it first from a refresh, and
 * must wipe itself (as on 4403) rather than just sign in again.
 */
export const ACCOUNT_DISABLED = 'account_disabled';
const accountDisabled = () => new Unauthorized('This account is disabled', ACCOUNT_DISABLED);

/** A session as the sync channel sees it: `device_revoked` when it ended with its device's revocation. */
export type SessionState = 'live' | 'revoked' | 'device_revoked' | 'disabled';
type Ended = Exclude<SessionState, 'live'>;

/**
 * How a session that no longer stands ended, or null while it stands: the one rule behind the
 * sync channel's close codes and the refusals of a token and a refresh token. A session ended by
 * disabling its account is told as `disabled` only while the account stays disabled; enabled
 * again, its tokens are plain unknown ones.
 */
function endOf(row: { revokedAt: unknown; revokedReason: string | null; disabledAt: unknown } | undefined): Ended | null {
  if (!row) return 'revoked';
  if (!row.revokedAt) return null;
  if (row.revokedReason === DEVICE_REVOKED) return 'device_revoked';
  if (row.revokedReason === ACCOUNT_DISABLED && row.disabledAt) return 'disabled';
  return 'revoked';
}
const refusalOf = (end: Ended, invalid: string): Unauthorized =>
  end === 'device_revoked' ? deviceRevoked() : end === 'disabled' ? accountDisabled() : new Unauthorized(invalid, 'invalid_token');

export function createSessions(deps: { db: Db; clock: Clock; accessTokens: AccessTokens; refreshTtlSeconds: number }) {
  const { clock, accessTokens } = deps;
  /**
   * Every authenticated request runs this: the live session, the enabled user, the seat and
   * the time zone in one prepared statement (runPrepared: a named statement on PostgreSQL,
   * PREPAREd in SQL on PGlite), with the route's extra column when it names one.
   */
  const checkSession = (sessionId: string, userId: string, extra: SessionExtra | undefined) =>
    runPrepared<{ revoked_at: unknown; revoked_reason: string | null; disabled_at: unknown; organization_id: string | null; role: string | null; time_zone: string | null; extra: unknown }>(
      deps.db,
      extra?.name ?? 'session_check',
      sql`select s.revoked_at, s.revoked_reason, users.disabled_at, m.organization_id, m.role, cs.time_zone, ${extra?.column ?? sql`null`} as extra
        from ${sessions} s join ${users} on users.id = s.user_id
        left join ${organizationMembers} m on m.user_id = users.id
        left join ${clinicianSettings} cs on cs.user_id = users.id
        where s.id = ${sessionId}::uuid and s.user_id = ${userId}::uuid`,
    );

  async function mintRefresh(tx: Db, sessionId: string, now: Date): Promise<string> {
    const refresh = newOpaqueToken();
    await tx.insert(refreshTokens).values({
      sessionId,
      tokenHash: sha256(refresh),
      expiresAt: addSeconds(now, deps.refreshTtlSeconds),
    });
    return refresh;
  }

  return {
    /** Opens a session for a user who just proved who they are; runs in the caller's transaction. */
    async open(tx: Db, userId: string, method: string): Promise<TokenPair> {
      const now = clock.now();
      const [session] = await tx
        .insert(sessions)
        .values({ userId, method, expiresAt: addSeconds(now, deps.refreshTtlSeconds) })
        .returning({ id: sessions.id });
      if (!session) throw new Error('session insert returned nothing');
      const refresh = await mintRefresh(tx, session.id, now);
      const access = await accessTokens.issue(userId, session.id, now);
      return { token: access.token, refresh_token: refresh, expires_in: access.expiresIn };
    },

    /** Verifies a bearer token against its signature and the live session; answers the caller with their seat (and `extra`'s facts). */
    async authenticate(token: string, extra?: SessionExtra): Promise<Caller> {
      const now = clock.now();
      const claims = await accessTokens.verify(token, now);
      if (!claims) throw new Unauthorized('Invalid or expired token', 'invalid_token');
      // The claims are verified; an id that is not a uuid names no session (and is not worth a lookup).
      if (!isUuid(claims.sessionId) || !isUuid(claims.userId)) throw new Unauthorized('Invalid or expired token', 'invalid_token');
      const [row] = await checkSession(claims.sessionId, claims.userId, extra);
      const end = endOf(row && { revokedAt: row.revoked_at, revokedReason: row.revoked_reason, disabledAt: row.disabled_at });
      if (end || !row) throw refusalOf(end ?? 'revoked', 'Invalid or expired token');
      if (row.disabled_at) throw accountDisabled();
      const seat = row.organization_id ? { organizationId: row.organization_id, role: row.role === 'admin' ? ('admin' as const) : ('member' as const) } : null;
      return { userId: claims.userId, sessionId: claims.sessionId, seat, timeZone: row.time_zone ?? DEFAULT_TIME_ZONE, extra: row.extra ?? null };
    },

    /** Whether a session still admits its user (the sync channel re-checks open sockets). */
    async state(userId: string, sessionId: string): Promise<SessionState> {
      const [row] = await deps.db
        .select({ revokedAt: sessions.revokedAt, revokedReason: sessions.revokedReason, disabledAt: users.disabledAt })
        .from(sessions)
        .innerJoin(users, eq(users.id, sessions.userId))
        .where(and(eq(sessions.id, sessionId), eq(sessions.userId, userId)));
      return endOf(row) ?? (row?.disabledAt ? 'disabled' : 'live');
    },

    /**
     * Exchanges a refresh token for a new pair and retires it. A retired token presented
     * again means it leaked or a client replayed it: the whole family is revoked.
     */
    async refresh(refreshToken: string): Promise<TokenPair> {
      // Ours are 43 characters; anything far longer cannot be one and is not worth hashing.
      if (refreshToken.length > MAX_REFRESH_TOKEN_CHARS) throw new Unauthorized('Invalid refresh token', 'invalid_token');
      const now = clock.now();
      const hash = sha256(refreshToken);
      return deps.db.transaction(async (tx) => {
        const [row] = await tx
          .select({
            id: refreshTokens.id,
            sessionId: refreshTokens.sessionId,
            expiresAt: refreshTokens.expiresAt,
            retiredAt: refreshTokens.retiredAt,
            revokedAt: sessions.revokedAt,
            revokedReason: sessions.revokedReason,
            userId: sessions.userId,
            disabledAt: users.disabledAt,
          })
          .from(refreshTokens)
          .innerJoin(sessions, eq(sessions.id, refreshTokens.sessionId))
          .innerJoin(users, eq(users.id, sessions.userId))
          .where(eq(refreshTokens.tokenHash, hash))
          .for('update', { of: refreshTokens });
        const end = endOf(row);
        if (end || !row) throw refusalOf(end ?? 'revoked', 'Invalid refresh token');
        if (row.retiredAt) {
          await tx
            .update(sessions)
            .set({ revokedAt: now, revokedReason: 'refresh_token_reuse' })
            .where(eq(sessions.id, row.sessionId));
          return null;
        }
        if (row.expiresAt <= now) throw new Unauthorized('Refresh token expired', 'invalid_token');
        if (row.disabledAt) throw accountDisabled();
        await tx.update(refreshTokens).set({ retiredAt: now }).where(eq(refreshTokens.id, row.id));
        // A session lives as long as it is used: each refresh slides its end with the new token's.
        await tx
          .update(sessions)
          .set({ lastRefreshedAt: now, expiresAt: addSeconds(now, deps.refreshTtlSeconds) })
          .where(eq(sessions.id, row.sessionId));
        const refresh = await mintRefresh(tx, row.sessionId, now);
        const access = await accessTokens.issue(row.userId, row.sessionId, now);
        return { token: access.token, refresh_token: refresh, expires_in: access.expiresIn };
      }).then((pair) => {
        // Thrown after commit so the family's revocation is kept.
        if (!pair) throw new Unauthorized('Refresh token was already used; the session is revoked', 'refresh_token_reused');
        return pair;
      });
    },

    async revoke(tx: Db, sessionId: string, reason: string): Promise<void> {
      await tx
        .update(sessions)
        .set({ revokedAt: clock.now(), revokedReason: reason })
        .where(and(eq(sessions.id, sessionId), isNull(sessions.revokedAt)));
    },

    /** Revokes every live session of a user, except `keep` when given. */
    async revokeAll(tx: Db, userId: string, reason: string, keep?: string): Promise<number> {
      const result = await tx
        .update(sessions)
        .set({ revokedAt: clock.now(), revokedReason: reason })
        .where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt), keep ? ne(sessions.id, keep) : sql`true`))
        .returning({ id: sessions.id });
      return result.length;
    },
  };
}

export type Sessions = ReturnType<typeof createSessions>;
