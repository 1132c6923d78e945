import { and, eq, gt, lte } from 'drizzle-orm';
import { invitations, organizationMembers, organizations, users } from '@fieldchart/schema/db';
import type { InvitationRecord } from '@fieldchart/schema/api';
import { isUniqueViolation, type Db } from '../../db/database.ts';
import { addSeconds, type Clock } from '../../clock.ts';
import type { Config } from '../../config.ts';
import { Forbidden, Invalid, NotFound } from '../../errors.ts';
import { organizationInvitation } from '../../mail/templates.ts';
import { newOpaqueToken, sha256 } from '../../security/random-tokens.ts';
import type { Principal } from '../auth/sessions.ts';
import type { MailOutbox } from '../mail/mail-outbox.ts';
import type { NotificationsService } from '../notifications/notifications.ts';
import { findUserById } from '../users/user-profile.ts';
import { isUuid } from '../ids.ts';
import { alreadyInOrganization, type Membership } from './membership.ts';
import { selectInvitations } from './records.ts';
import { requireAdmin, seatOf, type MemberRole } from './seats.ts';
import type { OrganizationMailCap } from './mail-cap.ts';

/** How long an invitation (and its emailed link) stays open. */
export const INVITATION_TTL_DAYS = 7;

const openInvitationExists = () =>
  Invalid.field('email', 'An open invitation to this email already exists', 'invitation_exists');
const notFound = () => new NotFound('Invitation not found', 'invitation_not_found');
const emailUnverified = () =>
  new Forbidden('Verify your email address to see and answer invitations sent to it (POST /verify-email/send-otp)', 'email_unverified');
const notOpen = () => new NotFound('This invitation is no longer open', 'invitation_not_open');

export interface NewInvitation {
  email: string;
  role: MemberRole;
  first_name?: string | undefined;
  last_name?: string | undefined;
}

/**
 * Invitations an admin sends to an email. At most one pending per (organization, email) — a
 * partial unique index says so. The token mailed in {APP_URL}/invite/{token} has 256 random
 * bits and only its SHA-256 is stored; it works once (the sign-up flow consumes it). A pending
 * invitation past expires_at reads as `expired` and is stored so when it stands in the way of
 * a new one.
 */
export function createInvitations(deps: {
  db: Db;
  clock: Clock;
  config: Config;
  mail: MailOutbox;
  membership: Membership;
  notifications: NotificationsService;
  mailCap: OrganizationMailCap;
}) {
  const { db, clock } = deps;

  /** An invitation addressed to the caller that is still open; anything else is 404. */
  async function openInvitationFor(tx: Db, principal: Principal, invitationId: string) {
    if (!isUuid(invitationId)) throw notFound();
    const user = await findUserById(tx, principal.userId);
    if (!user) throw notFound();
    const [row] = await tx
      .select()
      .from(invitations)
      .where(and(eq(invitations.id, invitationId), eq(invitations.email, user.email)))
      .for('update');
    // An invitation addressed to someone else is the same 404 as an unknown one, whoever asks.
    if (!row) throw notFound();
    // Invitations are addressed by email: only an owner who proved the address may answer.
    if (!user.emailVerifiedAt) throw emailUnverified();
    if (row.status !== 'pending' || row.expiresAt <= clock.now()) throw notOpen();
    return { row, user };
  }

  return {
    /**
     * POST /my-organization/invitations (admin). 422 when the email belongs to a member of
     * any organization (this one included) or an open invitation to it exists.
     */
    async invite(principal: Principal, input: NewInvitation): Promise<void> {
      const seat = await requireAdmin(db, principal);
      const now = clock.now();
      const token = newOpaqueToken();
      await db.transaction(async (tx) => {
        const [existing] = await tx
          .select({ id: users.id, firstName: users.firstName, emailVerifiedAt: users.emailVerifiedAt, organizationId: organizationMembers.organizationId })
          .from(users)
          .leftJoin(organizationMembers, eq(organizationMembers.userId, users.id))
          .where(eq(users.email, input.email));
        if (existing?.organizationId) {
          const message =
            existing.organizationId === seat.organizationId
              ? 'This email belongs to a member of your organization already'
              : 'This email belongs to a member of another organization';
          throw Invalid.field('email', message, 'email_in_organization');
        }
        // An expired pending invitation no longer blocks a new one.
        await tx
          .update(invitations)
          .set({ status: 'expired' })
          .where(
            and(
              eq(invitations.organizationId, seat.organizationId),
              eq(invitations.email, input.email),
              eq(invitations.status, 'pending'),
              lte(invitations.expiresAt, now),
            ),
          );
        let invitationId: string | undefined;
        try {
          const [created] = await tx.insert(invitations).values({
            organizationId: seat.organizationId,
            email: input.email,
            role: input.role,
            firstName: input.first_name ?? null,
            lastName: input.last_name ?? null,
            status: 'pending',
            tokenHash: sha256(token),
            expiresAt: addSeconds(now, INVITATION_TTL_DAYS * 86_400),
            invitedBy: principal.userId,
            createdAt: now,
          }).returning({ id: invitations.id });
          invitationId = created?.id;
        } catch (err) {
          if (isUniqueViolation(err)) throw openInvitationExists();
          throw err;
        }
        await deps.mailCap(tx, principal.userId);
        const [context] = await tx
          .select({ organizationName: organizations.name, inviterFirst: users.firstName, inviterLast: users.lastName })
          .from(organizations)
          .leftJoin(users, eq(users.id, principal.userId))
          .where(eq(organizations.id, seat.organizationId));
        await deps.mail.enqueue(
          tx,
          input.email,
          organizationInvitation({
            firstName: input.first_name ?? existing?.firstName ?? null,
            organizationName: context?.organizationName ?? 'an organization',
            inviterName: context?.inviterFirst ? `${context.inviterFirst} ${context.inviterLast ?? ''}`.trim() : null,
            role: input.role,
            // An account exists: the invitation shows in the app, no sign-up link.
            link: existing ? null : `${deps.config.appUrl.replace(/\/$/, '')}/invite/${token}`,
            validDays: INVITATION_TTL_DAYS,
          }),
        );
        // In the app only for a verified address (the invitee's list shows nothing otherwise).
        if (existing?.emailVerifiedAt && invitationId) {
          await deps.notifications.record(tx, { userId: existing.id, type: 'invitation_received', data: { invitation_uuid: invitationId } });
        }
      });
    },

    /** GET /my-organization/invitations (admin): everything the organization sent, newest first. */
    async listSent(principal: Principal): Promise<InvitationRecord[]> {
      const seat = await requireAdmin(db, principal);
      return selectInvitations(db, eq(invitations.organizationId, seat.organizationId), clock.now());
    },

    /** DELETE /my-organization/invitations/{uuid} (admin). Revoking twice is harmless; a closed one is 404 (no longer open). */
    async revoke(principal: Principal, invitationId: string): Promise<void> {
      const seat = await requireAdmin(db, principal);
      await db.transaction(async (tx) => {
        const [row] = await tx
          .select()
          .from(invitations)
          .where(and(eq(invitations.id, invitationId), eq(invitations.organizationId, seat.organizationId)))
          .for('update');
        if (!row) throw notFound();
        if (row.status === 'revoked') return;
        if (row.status !== 'pending' || row.expiresAt <= clock.now()) throw notOpen();
        await tx.update(invitations).set({ status: 'revoked', respondedAt: clock.now() }).where(eq(invitations.id, row.id));
      });
    },

    /** GET /my-invitations: open invitations addressed to the caller's email, once it is verified. */
    async listMine(principal: Principal): Promise<InvitationRecord[]> {
      const user = await findUserById(db, principal.userId);
      if (!user?.emailVerifiedAt) return [];
      return selectInvitations(
        db,
        and(eq(invitations.email, user.email), eq(invitations.status, 'pending'), gt(invitations.expiresAt, clock.now())),
        clock.now(),
      );
    },

    /**
     * POST /my-invitations/{uuid}/accept: seats the caller with the invited role in one
     * transaction, through the same seatUser as a join-request approval.
     */
    async accept(principal: Principal, invitationId: string): Promise<string> {
      return db.transaction(async (tx) => {
        const { row } = await openInvitationFor(tx, principal, invitationId);
        if (await seatOf(tx, principal.userId)) throw alreadyInOrganization();
        await tx
          .update(invitations)
          .set({ status: 'accepted', acceptedUserId: principal.userId, respondedAt: clock.now() })
          .where(eq(invitations.id, row.id));
        await deps.membership.seatUser(tx, row.organizationId, principal.userId, row.role as MemberRole);
        const [org] = await tx.select({ name: organizations.name }).from(organizations).where(eq(organizations.id, row.organizationId));
        return org?.name ?? '';
      });
    },

    /** POST /my-invitations/{uuid}/decline. */
    async decline(principal: Principal, invitationId: string): Promise<void> {
      await db.transaction(async (tx) => {
        const { row } = await openInvitationFor(tx, principal, invitationId);
        await tx.update(invitations).set({ status: 'declined', respondedAt: clock.now() }).where(eq(invitations.id, row.id));
      });
    },
  };
}

export type Invitations = ReturnType<typeof createInvitations>;
