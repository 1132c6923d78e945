/**
 * Devices as the server knows them: one `sync_clients` row per user and client id (one app
 * install). Operators list and revoke them (`fieldchart device …`); the sync hub asks, at every
 * hello, whether a device may sync and whether it must first wipe what it holds
 * (docs/sync-protocol.md, Revoked devices; Leaving an organization).
 */
import { and, asc, eq, inArray, isNull, sql } from 'drizzle-orm';
import { sessions, syncClientSessions, syncClients, users } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';
import { NotFound } from '../../errors.ts';
import type { AuditContext, AuditLog } from '../audit/audit-log.ts';
import { DEVICE_REVOKED } from '../auth/sessions.ts';
import { isUuid } from '../ids.ts';
import { findUserByEmail, findUserById } from '../users/user-profile.ts';
import { SYNC_CHANNELS } from './channels.ts';

/** Operator actions are audited without a user: the CLI or admin socket acted. */
const OPERATOR: AuditContext = { actorUserId: null, organizationId: null, requestId: null };

export interface DeviceRecord {
  readonly client_id: string;
  readonly user_uuid: string;
  readonly email: string;
  readonly last_mutation_id: number;
  readonly first_seen_at: string;
  readonly last_seen_at: string | null;
  readonly revoked_at: string | null;
}

/** What a device's hello is answered, beyond its token: go on, or a refusal. */
export type DeviceStanding = 'ok' | 'device_revoked' | 'organization_left';

/**
 * The standing rule, pure: a revoked device is refused; a device that was welcomed under an
 * organization seat the user no longer holds, and still holds synced data (it sent a cursor),
 * must wipe before it syncs again.
 */
export function standingOf(row: { revokedAt: Date | null; syncedOrganizationId: string | null } | undefined, holdsData: boolean, seat: string | null): DeviceStanding {
  if (row?.revokedAt) return 'device_revoked';
  if (holdsData && row?.syncedOrganizationId && row.syncedOrganizationId !== seat) return 'organization_left';
  return 'ok';
}

/**
 * Records that the device (`clientId` for `userId`, whose `sync_clients` row exists) used the
 * session. Once per session and device: the insert of a known pair changes nothing.
 */
export async function linkSession(tx: Db, userId: string, clientId: string, sessionId: string): Promise<void> {
  await tx.insert(syncClientSessions).values({ userId, clientId, sessionId }).onConflictDoNothing();
}

/**
 * Ends the sessions the device used (for `userIds`): its tokens are refused from now on, on
 * the REST API as on the socket, and cannot be refreshed. The users' other sessions (other
 * devices) are left alone.
 */
async function revokeSessionsOf(tx: Db, clientId: string, userIds: readonly string[], now: Date): Promise<number> {
  if (userIds.length === 0) return 0;
  const used = tx
    .select({ id: syncClientSessions.sessionId })
    .from(syncClientSessions)
    .where(and(eq(syncClientSessions.clientId, clientId), inArray(syncClientSessions.userId, [...userIds])));
  const ended = await tx
    .update(sessions)
    .set({ revokedAt: now, revokedReason: DEVICE_REVOKED })
    .where(and(inArray(sessions.id, used), isNull(sessions.revokedAt)))
    .returning({ id: sessions.id });
  return ended.length;
}

export function createDevices(deps: { db: Db; clock: Clock; audit: AuditLog }) {
  const { db, clock, audit } = deps;

  async function resolveUser(ref: string) {
    const u = isUuid(ref) ? await findUserById(db, ref) : await findUserByEmail(db, ref);
    if (!u) throw new NotFound(`No user ${ref}`, 'user_not_found');
    return u;
  }

  const record = {
    client_id: syncClients.clientId,
    user_uuid: syncClients.userId,
    email: users.email,
    last_mutation_id: syncClients.lastMutationId,
    first_seen_at: syncClients.createdAt,
    last_seen_at: syncClients.lastSeenAt,
    revoked_at: syncClients.revokedAt,
  };
  const asRecord = (r: { client_id: string; user_uuid: string; email: string; last_mutation_id: number; first_seen_at: Date; last_seen_at: Date | null; revoked_at: Date | null }): DeviceRecord => ({
    ...r,
    first_seen_at: r.first_seen_at.toISOString(),
    last_seen_at: r.last_seen_at?.toISOString() ?? null,
    revoked_at: r.revoked_at?.toISOString() ?? null,
  });

  return {
    /** A user's devices, first seen first. */
    async list(userRef: string): Promise<{ user: string; items: DeviceRecord[] }> {
      const user = await resolveUser(userRef);
      const rows = await db
        .select(record)
        .from(syncClients)
        .innerJoin(users, eq(users.id, syncClients.userId))
        .where(eq(syncClients.userId, user.id))
        .orderBy(asc(syncClients.createdAt), asc(syncClients.clientId));
      return { user: user.email, items: rows.map(asRecord) };
    },

    /**
     * Revokes a device — for one user, or for every user it synced for — in one audited
     * transaction that also pokes the users' live sockets on every node (`fieldchart_session`),
     * so an open socket of it closes at once. Revoking a revoked device changes nothing.
     */
    async revoke(clientId: string, userRef?: string): Promise<{ revoked: DeviceRecord[] }> {
      if (!isUuid(clientId)) throw new NotFound(`No device ${clientId}`, 'device_not_found');
      const user = userRef === undefined ? null : await resolveUser(userRef);
      const ids = await audit.around(OPERATOR, { action: 'update', resourceType: 'sync_device', resourceId: clientId, details: { op: 'revoke' } }, async (tx, note) => {
        const where = and(eq(syncClients.clientId, clientId), user ? eq(syncClients.userId, user.id) : undefined);
        const found = await tx.select({ userId: syncClients.userId, revokedAt: syncClients.revokedAt }).from(syncClients).where(where).for('update');
        if (found.length === 0) throw new NotFound(`No device ${clientId}${user ? ` for ${user.email}` : ''}`, 'device_not_found');
        const now = clock.now();
        await tx
          .update(syncClients)
          .set({ revokedAt: sql`coalesce(${syncClients.revokedAt}, ${now.toISOString()}::timestamptz)`, updatedAt: now })
          .where(where);
        const userIds = [...new Set(found.map((f) => f.userId))];
        const sessionsEnded = await revokeSessionsOf(tx, clientId, userIds, now);
        // Sent on commit: each node re-checks these users' sockets (hub.ts) and closes this one.
        for (const id of userIds) await tx.execute(sql`select pg_notify(${SYNC_CHANNELS.session}, ${id})`);
        note({ details: { users: userIds.length, newly: found.filter((f) => f.revokedAt === null).length, sessions: sessionsEnded } });
        return userIds;
      });
      const rows = await db
        .select(record)
        .from(syncClients)
        .innerJoin(users, eq(users.id, syncClients.userId))
        .where(and(eq(syncClients.clientId, clientId), inArray(syncClients.userId, ids)))
        .orderBy(asc(users.email));
      return { revoked: rows.map(asRecord) };
    },

    /**
     * A device says hello: recorded as seen (created if new), with the session it said hello
     * with, and judged. A device allowed on records the seat it is welcomed under — unless it
     * must first wipe what an ended seat gave it, which it shows by coming back without a
     * cursor. A revoked device's session ends here too: the same install signed in again
     * (docs/sync-protocol.md) holds no token that works.
     */
    async admit(userId: string, clientId: string, sessionId: string, holdsData: boolean, seat: string | null): Promise<DeviceStanding> {
      return db.transaction(async (tx) => {
        const now = clock.now();
        const [row] = await tx
          .insert(syncClients)
          .values({ userId, clientId, lastSeenAt: now })
          .onConflictDoUpdate({ target: [syncClients.userId, syncClients.clientId], set: { lastSeenAt: now } })
          .returning({ revokedAt: syncClients.revokedAt, syncedOrganizationId: syncClients.syncedOrganizationId });
        const standing = standingOf(row, holdsData, seat);
        await linkSession(tx, userId, clientId, sessionId);
        if (standing === 'device_revoked') await revokeSessionsOf(tx, clientId, [userId], now);
        if (standing === 'ok' && row?.syncedOrganizationId !== seat) {
          await tx.update(syncClients).set({ syncedOrganizationId: seat }).where(and(eq(syncClients.userId, userId), eq(syncClients.clientId, clientId)));
        }
        return standing;
      });
    },

    /** Whether the device is revoked (the socket's re-check, `POST /sync/mutations`). */
    async isRevoked(userId: string, clientId: string): Promise<boolean> {
      const [row] = await db
        .select({ revokedAt: syncClients.revokedAt })
        .from(syncClients)
        .where(and(eq(syncClients.userId, userId), eq(syncClients.clientId, clientId)));
      return Boolean(row?.revokedAt);
    },
  };
}

export type Devices = ReturnType<typeof createDevices>;
