import { and, eq } from 'drizzle-orm';
import { joinRequests, organizations, users } from '@fieldchart/schema/db';
import type { JoinRequestRecord } from '@fieldchart/schema/api';
import { isUniqueViolation, type Db } from '../../db/database.ts';
import type { Clock } from '../../clock.ts';
import { Conflict, NotFound } from '../../errors.ts';
import { joinRequestApproved } from '../../mail/templates.ts';
import type { Principal } from '../auth/sessions.ts';
import type { MailOutbox } from '../mail/mail-outbox.ts';
import type { NotificationsService } from '../notifications/notifications.ts';
import { alreadyInOrganization, type Membership } from './membership.ts';
import { selectJoinRequests } from './records.ts';
import { requireAdmin, seatOf } from './seats.ts';

const pendingExists = () => new Conflict('You already asked to join this organization', 'join_request_pending');

/**
 * Join requests: a clinician asks, an admin of that organization approves or rejects
 * (contract: GET /my-organization/join-requests, POST …/{uuid}/approve|reject).
 */
export function createJoinRequests(deps: { db: Db; clock: Clock; mail: MailOutbox; membership: Membership; notifications: NotificationsService }) {
  const { db, clock } = deps;

  /** Only listed, active organizations take requests; anything else is "not found". */
  async function joinableOrganization(tx: Db, organizationId: string) {
    const [org] = await tx
      .select({ id: organizations.id, name: organizations.name })
      .from(organizations)
      .where(and(eq(organizations.id, organizationId), eq(organizations.listed, true), eq(organizations.status, 'active')));
    if (!org) throw new NotFound('Organization not found', 'organization_not_found');
    return org;
  }

  async function pendingOf(tx: Db, organizationId: string, userId: string) {
    const [row] = await tx
      .select({ id: joinRequests.id })
      .from(joinRequests)
      .where(and(eq(joinRequests.organizationId, organizationId), eq(joinRequests.userId, userId), eq(joinRequests.status, 'pending')));
    return row ?? null;
  }

  async function insertRequest(tx: Db, organizationId: string, userId: string): Promise<string> {
    try {
      const [row] = await tx
        .insert(joinRequests)
        .values({ organizationId, userId, status: 'pending', createdAt: clock.now() })
        .returning({ id: joinRequests.id });
      if (!row) throw new Error('join request insert returned nothing');
      return row.id;
    } catch (err) {
      if (isUniqueViolation(err)) throw pendingExists();
      throw err;
    }
  }

  /** The admin's organization and one of its requests; another organization's request is 404. */
  async function requestForAdmin(tx: Db, principal: Principal, requestId: string) {
    const seat = await requireAdmin(tx, principal);
    const [request] = await tx
      .select()
      .from(joinRequests)
      .where(and(eq(joinRequests.id, requestId), eq(joinRequests.organizationId, seat.organizationId)))
      .for('update');
    if (!request) throw new NotFound('Join request not found', 'join_request_not_found');
    if (request.status !== 'pending') throw new Conflict(`This join request is already ${request.status}`, 'join_request_not_pending');
    return { seat, request };
  }

  return {
    /** POST /organizations/{uuid}/join-request: 404 unknown or unlisted; 409 seated or already pending. */
    async create(principal: Principal, organizationId: string): Promise<string> {
      await joinableOrganization(db, organizationId);
      const seat = await seatOf(db, principal.userId);
      if (seat?.organizationId === organizationId) throw new Conflict('You are already a member of this organization', 'already_member');
      if (seat) throw new Conflict('You already belong to an organization; leave it first', 'already_in_organization');
      if (await pendingOf(db, organizationId, principal.userId)) throw pendingExists();
      return insertRequest(db, organizationId, principal.userId);
    },

    /**
     * POST /complete-onboarding with organization_uuid: the same request, but a clinician who
     * already sits somewhere or already asked is left as they are (onboarding must not fail
     * over it). 404 for an unknown organization.
     */
    async requestDuringOnboarding(userId: string, organizationId: string): Promise<void> {
      await joinableOrganization(db, organizationId);
      if (await seatOf(db, userId)) return;
      if (await pendingOf(db, organizationId, userId)) return;
      await insertRequest(db, organizationId, userId).catch((err: unknown) => {
        if ((err as { code?: string }).code !== 'join_request_pending') throw err;
      });
    },

    /** GET /my-join-requests: the caller's pending requests. */
    async listMine(principal: Principal): Promise<JoinRequestRecord[]> {
      return selectJoinRequests(db, and(eq(joinRequests.userId, principal.userId), eq(joinRequests.status, 'pending')));
    },

    /** GET /my-organization/join-requests (admin): the organization's pending requests. */
    async listForAdmin(principal: Principal): Promise<JoinRequestRecord[]> {
      const seat = await requireAdmin(db, principal);
      return selectJoinRequests(db, and(eq(joinRequests.organizationId, seat.organizationId), eq(joinRequests.status, 'pending')));
    },

    /** Approval seats the requester as member, in one transaction, and mails them. */
    async approve(principal: Principal, requestId: string): Promise<void> {
      await db.transaction(async (tx) => {
        const { seat, request } = await requestForAdmin(tx, principal, requestId);
        const now = clock.now();
        if (await seatOf(tx, request.userId)) throw alreadyInOrganization();
        await tx
          .update(joinRequests)
          .set({ status: 'approved', decidedAt: now, decidedBy: principal.userId })
          .where(eq(joinRequests.id, request.id));
        await deps.membership.seatUser(tx, seat.organizationId, request.userId, 'member');
        const [who] = await tx
          .select({ email: users.email, firstName: users.firstName, organizationName: organizations.name })
          .from(users)
          .innerJoin(organizations, eq(organizations.id, seat.organizationId))
          .where(eq(users.id, request.userId));
        if (who) await deps.mail.enqueue(tx, who.email, joinRequestApproved({ firstName: who.firstName, organizationName: who.organizationName }));
        await deps.notifications.record(tx, {
          userId: request.userId,
          type: 'join_request_approved',
          data: { join_request_uuid: request.id, organization_uuid: seat.organizationId },
        });
      });
    },

    async reject(principal: Principal, requestId: string): Promise<void> {
      await db.transaction(async (tx) => {
        const { request } = await requestForAdmin(tx, principal, requestId);
        await tx
          .update(joinRequests)
          .set({ status: 'rejected', decidedAt: clock.now(), decidedBy: principal.userId })
          .where(eq(joinRequests.id, request.id));
      });
    },
  };
}

export type JoinRequests = ReturnType<typeof createJoinRequests>;
