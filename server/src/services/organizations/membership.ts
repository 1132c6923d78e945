import { and, eq, ne } from 'drizzle-orm';
import { joinRequests, organizationMembers, organizations, users } from '@fieldchart/schema/db';
import { isUniqueViolation, type Db } from '../../db/database.ts';
import type { Clock } from '../../clock.ts';
import { Invalid, NotFound } from '../../errors.ts';
import type { MemberRole } from './seats.ts';
import { readSubscription } from '../subscriptions/subscription-facts.ts';

export const alreadyInOrganization = () =>
  new Invalid('You already belong to an organization; leave it first', {}, 'already_in_organization');

/**
 * Seats and unseats. Every way into an organization — join-request approval, invitation
 * accept, invitation sign-up, claims, the operator's set-admin — goes through `seatUser`, so
 * they make the same writes.
 */
export function createMembership(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;

  return {
    /**
     * In the caller's transaction: the seat row (which makes the subscription org_managed:
     * subscriptionStatusOf), and the user's other pending join requests closed as rejected — with one
     * seat per user they can no longer be approved. Throws 422 already_in_organization when
     * the user sits somewhere already.
     */
    async seatUser(tx: Db, organizationId: string, userId: string, role: MemberRole): Promise<void> {
      const now = clock.now();
      try {
        await tx.insert(organizationMembers).values({ organizationId, userId, role, createdAt: now });
      } catch (err) {
        if (isUniqueViolation(err)) throw alreadyInOrganization();
        throw err;
      }
      await tx
        .update(joinRequests)
        .set({ status: 'rejected', decidedAt: now })
        .where(and(eq(joinRequests.userId, userId), eq(joinRequests.status, 'pending'), ne(joinRequests.organizationId, organizationId)));
    },

    /**
     * POST /my-organization/leave. The seat ends and the subscription falls back by the one
     * rule (subscriptionStatusOf): trial while the trial runs, active while a purchase runs,
     * otherwise expired. Personal feature overrides, kept while seated, apply again.
     * The last admin may leave: the organization, its members, pending requests and
     * invitations stay, and an operator seats a new admin with `fieldchart org set-admin`.
     */
    async leave(userId: string): Promise<{ organization_name: string; subscription_status: string }> {
      const now = clock.now();
      return db.transaction(async (tx) => {
        const [seat] = await tx
          .delete(organizationMembers)
          .where(eq(organizationMembers.userId, userId))
          .returning({ organizationId: organizationMembers.organizationId });
        if (!seat) throw new NotFound('You are not in an organization', 'not_in_organization');
        const [user] = await tx.select().from(users).where(eq(users.id, userId)).for('update');
        if (!user) throw new NotFound('User not found', 'user_not_found');
        const status = (await readSubscription(tx, user, now)).subscription_status;
        const [org] = await tx.select({ name: organizations.name }).from(organizations).where(eq(organizations.id, seat.organizationId));
        return { organization_name: org?.name ?? '', subscription_status: status };
      });
    },
  };
}

export type Membership = ReturnType<typeof createMembership>;
