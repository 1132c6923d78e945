import { and, asc, desc, eq, sql, type SQL } from 'drizzle-orm';
import { invitations, joinRequests, organizations, users } from '@fieldchart/schema/db';
import type {
  InvitationRecord,
  JoinRequestRecord,
  OrganizationRecord,
  OrganizationTypeName,
} from '@fieldchart/schema/api';
import type { Db } from '../../db/database.ts';
import { NotFound } from '../../errors.ts';
import type { Seat } from './seats.ts';

/** Row → API record mappers and the few reads several organization services share. */

export type OrganizationRow = typeof organizations.$inferSelect;
export type InvitationRow = typeof invitations.$inferSelect;

// Spelled out: inside a one-table select drizzle leaves column names unqualified, and a bare
// "id" in the subquery would mean organization_members.id.
const memberCount = sql<number>`(select count(*)::int from organization_members m where m.organization_id = "organizations"."id")`;

export function organizationRecord(row: OrganizationRow, members: number, seat: Seat | null): OrganizationRecord {
  return {
    uuid: row.id,
    name: row.name,
    email: row.email,
    phone: row.phone,
    address: row.address,
    type: row.type as OrganizationTypeName,
    member_count: Number(members),
    listed: row.listed,
    status: row.status as OrganizationRecord['status'],
    role: seat && seat.organizationId === row.id ? seat.role : null,
    created_at: row.createdAt.toISOString(),
  };
}

/** Organizations with their member counts, for search, my-organization and operators. */
export async function selectOrganizations(
  db: Db,
  where: SQL | undefined,
  opts: { limit?: number; offset?: number } = {},
): Promise<Array<{ row: OrganizationRow; members: number }>> {
  const rows = await db
    .select({ row: organizations, members: memberCount })
    .from(organizations)
    .where(and(sql`${organizations.deletedAt} is null`, where))
    .orderBy(asc(sql`lower(${organizations.name})`), asc(organizations.id))
    .limit(opts.limit ?? 100)
    .offset(opts.offset ?? 0);
  return rows.map((r) => ({ row: r.row, members: Number(r.members) }));
}

export async function organizationById(db: Db, id: string): Promise<{ row: OrganizationRow; members: number }> {
  const [found] = await selectOrganizations(db, eq(organizations.id, id), { limit: 1 });
  if (!found) throw new NotFound('Organization not found', 'organization_not_found');
  return found;
}

/** A pending invitation past its expiry reads as expired, whether or not a sweep stored it. */
export function invitationStatus(row: Pick<InvitationRow, 'status' | 'expiresAt'>, now: Date): InvitationRecord['status'] {
  if (row.status === 'pending' && row.expiresAt <= now) return 'expired';
  return row.status as InvitationRecord['status'];
}

export async function selectInvitations(db: Db, where: SQL | undefined, now: Date): Promise<InvitationRecord[]> {
  const rows = await db
    .select({
      invitation: invitations,
      organizationName: organizations.name,
      inviterFirst: users.firstName,
      inviterLast: users.lastName,
    })
    .from(invitations)
    .innerJoin(organizations, eq(organizations.id, invitations.organizationId))
    .leftJoin(users, eq(users.id, invitations.invitedBy))
    .where(where)
    .orderBy(desc(invitations.createdAt), asc(invitations.id));
  return rows.map(({ invitation: i, organizationName, inviterFirst, inviterLast }) => ({
    uuid: i.id,
    status: invitationStatus(i, now),
    email: i.email,
    role: i.role as InvitationRecord['role'],
    first_name: i.firstName,
    last_name: i.lastName,
    organization_uuid: i.organizationId,
    organization_name: organizationName,
    invited_by_name: inviterFirst === null ? null : `${inviterFirst} ${inviterLast ?? ''}`.trim(),
    created_at: i.createdAt.toISOString(),
    expires_at: i.expiresAt.toISOString(),
    responded_at: i.respondedAt?.toISOString() ?? null,
  }));
}

export async function selectJoinRequests(db: Db, where: SQL | undefined): Promise<JoinRequestRecord[]> {
  const rows = await db
    .select({ request: joinRequests, organizationName: organizations.name, user: users })
    .from(joinRequests)
    .innerJoin(organizations, eq(organizations.id, joinRequests.organizationId))
    .innerJoin(users, eq(users.id, joinRequests.userId))
    .where(where)
    .orderBy(asc(joinRequests.createdAt), asc(joinRequests.id));
  return rows.map(({ request: r, organizationName, user: u }) => ({
    uuid: r.id,
    status: r.status as JoinRequestRecord['status'],
    organization_uuid: r.organizationId,
    organization_name: organizationName,
    user: { uuid: u.id, first_name: u.firstName, last_name: u.lastName, email: u.email },
    created_at: r.createdAt.toISOString(),
    decided_at: r.decidedAt?.toISOString() ?? null,
  }));
}
