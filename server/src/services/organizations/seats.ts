import { eq } from 'drizzle-orm';
import { organizationMembers } from '@fieldchart/schema/db';
import type { Db } from '../../db/database.ts';
import { Forbidden } from '../../errors.ts';
import type { Principal } from '../auth/sessions.ts';

export type MemberRole = 'member' | 'admin';

export interface Seat {
  readonly organizationId: string;
  readonly role: MemberRole;
}

/** The caller's seat (a user sits in at most one organization), or null when solo. */
export async function seatOf(db: Db, userId: string): Promise<Seat | null> {
  const [row] = await db
    .select({ organizationId: organizationMembers.organizationId, role: organizationMembers.role })
    .from(organizationMembers)
    .where(eq(organizationMembers.userId, userId));
  return row ? { organizationId: row.organizationId, role: row.role as MemberRole } : null;
}

/**
 * Every admin-only operation starts here (spec: Authentication rule 11), so each answers the
 * same 403 whether the caller is a plain member or has no seat at all. Reports and other
 * areas that need an admin seat import this too.
 */
export async function requireAdmin(db: Db, principal: Principal): Promise<Seat> {
  const seat = await seatOf(db, principal.userId);
  if (!seat || seat.role !== 'admin') {
    throw new Forbidden('This needs an organization admin seat', 'not_organization_admin');
  }
  return seat;
}
