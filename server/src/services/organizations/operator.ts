import { and, asc, count, desc, eq, ilike, sql, type SQL } from 'drizzle-orm';
import { invitations, joinRequests, organizationClaims, organizationMembers, organizations, users } from '@fieldchart/schema/db';
import type { Db } from '../../db/database.ts';
import type { Clock } from '../../clock.ts';
import { Conflict, NotFound } from '../../errors.ts';
import { organizationApproved } from '../../mail/templates.ts';
import type { MailOutbox } from '../mail/mail-outbox.ts';
import { findUserByEmail, findUserById } from '../users/user-profile.ts';
import { isUuid } from '../ids.ts';
import { effectiveConfig, organizationSettingsOf } from './effective-config.ts';
import { alreadyInOrganization, type Membership } from './membership.ts';
import { containing } from './organizations.ts';
import { invitationStatus, organizationById, organizationRecord, selectInvitations, selectOrganizations, type OrganizationRow } from './records.ts';
import { seatOf } from './seats.ts';

/**
 * What operators do to organizations (`fieldchart org …`, `fieldchart invitation list`):
 * approve requests, connect back offices, seat admins. Organizations are named by uuid or by
 * exact name (case-insensitive; an ambiguous name is refused).
 */
export function createOrganizationOperator(deps: { db: Db; clock: Clock; mail: MailOutbox; membership: Membership }) {
  const { db, clock } = deps;

  async function resolveOrganization(tx: Db, ref: string): Promise<OrganizationRow> {
    const where = isUuid(ref) ? eq(organizations.id, ref) : sql`lower(${organizations.name}) = lower(${ref})`;
    const rows = await tx.select().from(organizations).where(and(where, sql`${organizations.deletedAt} is null`)).limit(2);
    if (rows.length > 1) throw new Conflict(`More than one organization is named "${ref}"; use its uuid`, 'ambiguous_organization');
    const [row] = rows;
    if (!row) throw new NotFound(`No organization ${ref}`, 'organization_not_found');
    return row;
  }

  async function resolveUser(tx: Db, ref: string) {
    const u = isUuid(ref) ? await findUserById(tx, ref) : await findUserByEmail(tx, ref);
    if (!u) throw new NotFound(`No user ${ref}`, 'user_not_found');
    return u;
  }

  async function summary(tx: Db, id: string) {
    const { row, members } = await organizationById(tx, id);
    const { role: _role, ...record } = organizationRecord(row, members, null);
    return {
      ...record,
      back_office_connected: row.backOfficeConnected,
      approved_at: row.approvedAt?.toISOString() ?? null,
      requested_by: row.requestedBy,
    };
  }

  return {
    async list(opts: { status?: string | undefined; search?: string | undefined; limit?: number | undefined; offset?: number | undefined } = {}) {
      const where: SQL | undefined = and(
        opts.status ? eq(organizations.status, opts.status) : undefined,
        opts.search ? ilike(organizations.name, containing(opts.search)) : undefined,
        sql`${organizations.deletedAt} is null`,
      );
      const [rows, [total]] = await Promise.all([
        selectOrganizations(db, where, { limit: opts.limit ?? 100, offset: opts.offset ?? 0 }),
        db.select({ n: count() }).from(organizations).where(where),
      ]);
      return {
        total: Number(total?.n ?? 0),
        items: rows.map(({ row, members }) => {
          const { role: _role, ...record } = organizationRecord(row, members, null);
          return { ...record, back_office_connected: row.backOfficeConnected };
        }),
      };
    },

    /** Everything an operator needs about one organization: seats, open requests, invitations, claims, config. */
    async show(ref: string) {
      const org = await resolveOrganization(db, ref);
      const now = clock.now();
      const [members, pendingRequests, sent, claims] = await Promise.all([
        db
          .select({ uuid: users.id, email: users.email, first_name: users.firstName, last_name: users.lastName, role: organizationMembers.role, since: organizationMembers.createdAt })
          .from(organizationMembers)
          .innerJoin(users, eq(users.id, organizationMembers.userId))
          .where(eq(organizationMembers.organizationId, org.id))
          .orderBy(asc(organizationMembers.createdAt)),
        db
          .select({ n: count() })
          .from(joinRequests)
          .where(and(eq(joinRequests.organizationId, org.id), eq(joinRequests.status, 'pending'))),
        db
          .select({ status: invitations.status, expiresAt: invitations.expiresAt })
          .from(invitations)
          .where(eq(invitations.organizationId, org.id)),
        db
          .select({
            uuid: organizationClaims.id,
            status: organizationClaims.status,
            contact_email: organizationClaims.contactEmail,
            expires_at: organizationClaims.expiresAt,
            created_at: organizationClaims.createdAt,
          })
          .from(organizationClaims)
          .where(eq(organizationClaims.organizationId, org.id))
          .orderBy(desc(organizationClaims.createdAt)),
      ]);
      const invitationCounts: Record<string, number> = {};
      for (const i of sent) {
        const s = invitationStatus(i, now);
        invitationCounts[s] = (invitationCounts[s] ?? 0) + 1;
      }
      const config = effectiveConfig({ organization: organizationSettingsOf(org), personalOverrides: {} });
      return {
        ...(await summary(db, org.id)),
        members: members.map((m) => ({ ...m, since: m.since.toISOString() })),
        pending_join_requests: Number(pendingRequests[0]?.n ?? 0),
        invitations: invitationCounts,
        claims: claims.map((c) => ({
          ...c,
          status: c.status === 'open' && c.expires_at <= now ? 'expired' : c.status,
          expires_at: c.expires_at.toISOString(),
          created_at: c.created_at.toISOString(),
        })),
        feature_overrides: org.featureOverrides,
        terminology_overrides: org.terminologyOverrides,
        features: config.features,
        terminology: config.terminology,
      };
    },

    /**
     * requested → active and listed. The requester, when still without a seat, becomes its
     * admin and is mailed. Approving an active organization changes nothing; an unclaimed one
     * becomes active only through its claim link.
     */
    async approve(ref: string) {
      const seatedAdmin = await db.transaction(async (tx) => {
        const org = await resolveOrganization(tx, ref);
        if (org.status === 'active') return null;
        if (org.status !== 'requested') {
          throw new Conflict('This organization is waiting for its contact to claim it; it cannot be approved', 'organization_unclaimed');
        }
        const now = clock.now();
        await tx.update(organizations).set({ status: 'active', listed: true, approvedAt: now, updatedAt: now }).where(eq(organizations.id, org.id));
        const requester = org.requestedBy ? await findUserById(tx, org.requestedBy) : null;
        if (!requester) return null;
        const seat = await seatOf(tx, requester.id);
        if (!seat) await deps.membership.seatUser(tx, org.id, requester.id, 'admin');
        await deps.mail.enqueue(tx, requester.email, organizationApproved({ firstName: requester.firstName, organizationName: org.name, seatedAsAdmin: !seat }));
        return seat ? null : requester.id;
      });
      const org = await resolveOrganization(db, ref);
      return { ...(await summary(db, org.id)), seated_admin: seatedAdmin };
    },

    /** Rule 5: credential_sync and coverage_sync stay false until this is on. */
    async setBackOffice(ref: string, connected: boolean) {
      const org = await resolveOrganization(db, ref);
      await db.update(organizations).set({ backOfficeConnected: connected, updatedAt: clock.now() }).where(eq(organizations.id, org.id));
      return summary(db, org.id);
    },

    /** Seats a user without a seat as admin, or promotes a member; a seat elsewhere is refused. */
    async setAdmin(ref: string, userRef: string) {
      return db.transaction(async (tx) => {
        const org = await resolveOrganization(tx, ref);
        const user = await resolveUser(tx, userRef);
        const seat = await seatOf(tx, user.id);
        if (seat && seat.organizationId !== org.id) throw alreadyInOrganization();
        if (!seat) await deps.membership.seatUser(tx, org.id, user.id, 'admin');
        else if (seat.role !== 'admin') {
          await tx.update(organizationMembers).set({ role: 'admin' }).where(eq(organizationMembers.userId, user.id));
        }
        return { organization: org.id, user: user.id, email: user.email, role: 'admin' as const, previous_role: seat?.role ?? null };
      });
    },

    async listInvitations(opts: { organization?: string | undefined; status?: string | undefined; limit?: number | undefined } = {}) {
      const org = opts.organization ? await resolveOrganization(db, opts.organization) : null;
      const rows = await selectInvitations(db, org ? eq(invitations.organizationId, org.id) : undefined, clock.now());
      const filtered = opts.status ? rows.filter((r) => r.status === opts.status) : rows;
      return { total: filtered.length, items: filtered.slice(0, opts.limit ?? 100) };
    },
  };
}

export type OrganizationOperator = ReturnType<typeof createOrganizationOperator>;
