import { and, eq, ilike } from 'drizzle-orm';
import { organizations } from '@fieldchart/schema/db';
import type { MyOrganizationRecord, OrganizationRecord, OrganizationTypeName } from '@fieldchart/schema/api';
import type { Db } from '../../db/database.ts';
import type { Clock } from '../../clock.ts';
import { NotFound } from '../../errors.ts';
import type { Principal } from '../auth/sessions.ts';
import { effectiveConfig, organizationSettingsOf } from './effective-config.ts';
import { organizationById, organizationRecord, selectOrganizations, type OrganizationRow } from './records.ts';
import { requireAdmin, seatOf, type Seat } from './seats.ts';

/** Search returns at most this many organizations (the spec's list is not paginated). */
export const SEARCH_LIMIT = 50;

export interface OrganizationProfilePatch {
  name?: string | undefined;
  email?: string | null | undefined;
  phone?: string | null | undefined;
  address?: string | null | undefined;
  type?: OrganizationTypeName | undefined;
}

export function myOrganizationRecord(row: OrganizationRow, members: number, seat: Seat): MyOrganizationRecord {
  const config = effectiveConfig({ organization: organizationSettingsOf(row), personalOverrides: {} });
  return {
    ...organizationRecord(row, members, seat),
    back_office_connected: row.backOfficeConnected,
    features: config.features,
    terminology: config.terminology,
  };
}

/** A LIKE pattern matching `term` anywhere, with its own wildcards taken literally. */
export function containing(term: string): string {
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Search, my-organization, organization requests and the admin's profile edits. */
export function createOrganizations(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;

  return {
    /** Listed organizations only, by name, case-insensitive; requested and unclaimed ones never show. */
    async search(principal: Principal, term: string | undefined): Promise<OrganizationRecord[]> {
      const seat = await seatOf(db, principal.userId);
      const rows = await selectOrganizations(
        db,
        and(eq(organizations.listed, true), eq(organizations.status, 'active'), term ? ilike(organizations.name, containing(term)) : undefined),
        { limit: SEARCH_LIMIT },
      );
      return rows.map(({ row, members }) => organizationRecord(row, members, seat));
    },

    async mine(principal: Principal): Promise<MyOrganizationRecord> {
      const seat = await seatOf(db, principal.userId);
      if (!seat) throw new NotFound('You are not in an organization', 'not_in_organization');
      const { row, members } = await organizationById(db, seat.organizationId);
      return myOrganizationRecord(row, members, seat);
    },

    /**
     * POST /organizations/request: the organization is stored as `requested` and unlisted;
     * `fieldchart org approve` lists it and seats the requester as its admin.
     */
    async request(principal: Principal, input: { name: string; type: OrganizationTypeName; email?: string | undefined }): Promise<string> {
      const now = clock.now();
      const [row] = await db
        .insert(organizations)
        .values({
          name: input.name,
          type: input.type,
          email: input.email ?? null,
          status: 'requested',
          listed: false,
          requestedBy: principal.userId,
          createdAt: now,
          updatedAt: now,
        })
        .returning({ id: organizations.id });
      if (!row) throw new Error('organization insert returned nothing');
      return row.id;
    },

    /** PUT /my-organization (admin). A type change changes the default flags (rule 6). */
    async update(principal: Principal, patch: OrganizationProfilePatch): Promise<MyOrganizationRecord> {
      const seat = await requireAdmin(db, principal);
      await db
        .update(organizations)
        .set({
          ...(patch.name !== undefined && { name: patch.name }),
          ...(patch.email !== undefined && { email: patch.email }),
          ...(patch.phone !== undefined && { phone: patch.phone || null }),
          ...(patch.address !== undefined && { address: patch.address || null }),
          ...(patch.type !== undefined && { type: patch.type }),
          updatedAt: clock.now(),
        })
        .where(eq(organizations.id, seat.organizationId));
      const { row, members } = await organizationById(db, seat.organizationId);
      return myOrganizationRecord(row, members, seat);
    },
  };
}

export type Organizations = ReturnType<typeof createOrganizations>;
