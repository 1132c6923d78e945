import { and, eq, lte, sql } from 'drizzle-orm';
import { organizationClaims, organizations } from '@fieldchart/schema/db';
import type { OrganizationTypeName } from '@fieldchart/schema/api';
import { isUniqueViolation, type Db } from '../../db/database.ts';
import { addSeconds, type Clock } from '../../clock.ts';
import type { Config } from '../../config.ts';
import { Invalid, NotFound } from '../../errors.ts';
import { claimCompletedForClaimer, claimCompletedForInviter, organizationClaim } from '../../mail/templates.ts';
import { newOpaqueToken, sha256 } from '../../security/random-tokens.ts';
import type { Principal } from '../auth/sessions.ts';
import type { MailOutbox } from '../mail/mail-outbox.ts';
import { findUserById } from '../users/user-profile.ts';
import { alreadyInOrganization, type Membership } from './membership.ts';
import { seatOf } from './seats.ts';
import type { OrganizationMailCap } from './mail-cap.ts';

/** How long a claim link stays open. */
export const CLAIM_TTL_DAYS = 14;

/**
 * The type an invited organization gets when the clinician does not say: one whose defaults
 * equal the solo defaults, so nothing switches on before its admin chooses the real type.
 */
export const DEFAULT_CLAIM_TYPE: OrganizationTypeName = 'clinic';

const claimExists = () =>
  new Invalid(
    'An open claim already exists for this organization and contact',
    { organization_name: ['an open claim already exists for this organization and contact'] },
    'claim_exists',
  );
const unknownClaim = () => new NotFound('This claim link is invalid or was already used', 'claim_not_found');

export interface NewClaim {
  organization_name: string;
  contact_email: string;
  organization_type?: OrganizationTypeName | undefined;
  contact_name?: string | undefined;
  message?: string | undefined;
}

/**
 * A clinician invites an organization that is not on Fieldchart yet: a private, unlisted
 * `unclaimed` organization plus an open claim whose link ({APP_URL}/claim/{token}, 256 random
 * bits, stored as SHA-256) goes to the contact. At most one open claim per
 * (lower(organization name), contact email). Claiming lists the organization and seats people.
 */
export function createClaims(deps: { db: Db; clock: Clock; config: Config; mail: MailOutbox; membership: Membership; mailCap: OrganizationMailCap }) {
  const { db, clock } = deps;

  async function claimByToken(tx: Db, token: string, lock = false) {
    const q = tx.select().from(organizationClaims).where(eq(organizationClaims.tokenHash, sha256(token)));
    const [row] = lock ? await q.for('update') : await q;
    return row ?? null;
  }

  const isExpired = (row: { status: string; expiresAt: Date }) => row.status === 'expired' || (row.status === 'open' && row.expiresAt <= clock.now());

  return {
    /** POST /organizations/invite. 422 when an unexpired open claim has the same name and contact. */
    async invite(principal: Principal, input: NewClaim): Promise<void> {
      const inviter = await findUserById(db, principal.userId);
      if (!inviter) throw new NotFound('User not found', 'user_not_found');
      const now = clock.now();
      const token = newOpaqueToken();
      await db.transaction(async (tx) => {
        // An expired open claim no longer blocks a new one.
        await tx
          .update(organizationClaims)
          .set({ status: 'expired' })
          .where(
            and(
              sql`lower(${organizationClaims.organizationName}) = lower(${input.organization_name})`,
              eq(organizationClaims.contactEmail, input.contact_email),
              eq(organizationClaims.status, 'open'),
              lte(organizationClaims.expiresAt, now),
            ),
          );
        const [open] = await tx
          .select({ id: organizationClaims.id })
          .from(organizationClaims)
          .where(
            and(
              sql`lower(${organizationClaims.organizationName}) = lower(${input.organization_name})`,
              eq(organizationClaims.contactEmail, input.contact_email),
              eq(organizationClaims.status, 'open'),
            ),
          );
        if (open) throw claimExists();
        const [org] = await tx
          .insert(organizations)
          .values({
            name: input.organization_name,
            type: input.organization_type ?? DEFAULT_CLAIM_TYPE,
            email: input.contact_email,
            status: 'unclaimed',
            listed: false,
            requestedBy: principal.userId,
            createdAt: now,
            updatedAt: now,
          })
          .returning({ id: organizations.id });
        if (!org) throw new Error('organization insert returned nothing');
        try {
          await tx.insert(organizationClaims).values({
            organizationId: org.id,
            organizationName: input.organization_name,
            contactEmail: input.contact_email,
            contactName: input.contact_name ?? null,
            message: input.message || null,
            inviterUserId: principal.userId,
            status: 'open',
            tokenHash: sha256(token),
            expiresAt: addSeconds(now, CLAIM_TTL_DAYS * 86_400),
            createdAt: now,
          });
        } catch (err) {
          if (isUniqueViolation(err)) throw claimExists();
          throw err;
        }
        await deps.mailCap(tx, principal.userId);
        await deps.mail.enqueue(
          tx,
          input.contact_email,
          organizationClaim({
            contactName: input.contact_name ?? null,
            organizationName: input.organization_name,
            inviterName: `${inviter.firstName} ${inviter.lastName}`.trim(),
            message: input.message || null,
            link: `${deps.config.appUrl.replace(/\/$/, '')}/claim/${token}`,
            validDays: CLAIM_TTL_DAYS,
          }),
        );
      });
    },

    /**
     * GET /organizations/claim/{token} (no auth). Only the organization's name, the inviter's
     * first name and whether the link expired: nothing about patients or visits. Unknown or
     * consumed: 404.
     */
    async preview(token: string): Promise<{ organization_name: string; inviter_first_name: string; expired: boolean }> {
      const claim = await claimByToken(db, token);
      if (!claim || claim.status === 'consumed') throw unknownClaim();
      const inviter = claim.inviterUserId ? await findUserById(db, claim.inviterUserId) : null;
      return { organization_name: claim.organizationName, inviter_first_name: inviter?.firstName ?? '', expired: isExpired(claim) };
    },

    /**
     * POST /organizations/claim: in one transaction the claim is consumed, the organization
     * becomes active and listed, the claimer is seated as admin, the inviting clinician as
     * member when still without a seat; both are mailed.
     */
    async claim(principal: Principal, token: string): Promise<{ organization_uuid: string; organization_name: string }> {
      return db.transaction(async (tx) => {
        const claim = await claimByToken(tx, token, true);
        if (!claim || claim.status === 'consumed') throw unknownClaim();
        if (isExpired(claim)) throw Invalid.field('token', 'This claim link has expired', 'claim_expired');
        if (await seatOf(tx, principal.userId)) throw alreadyInOrganization();
        const claimer = await findUserById(tx, principal.userId);
        if (!claimer) throw new NotFound('User not found', 'user_not_found');
        const now = clock.now();
        await tx
          .update(organizationClaims)
          .set({ status: 'consumed', consumedAt: now, consumedBy: principal.userId })
          .where(eq(organizationClaims.id, claim.id));
        const [org] = await tx
          .update(organizations)
          .set({ status: 'active', listed: true, approvedAt: now, updatedAt: now })
          .where(eq(organizations.id, claim.organizationId))
          .returning({ id: organizations.id, name: organizations.name });
        if (!org) throw unknownClaim();
        await deps.membership.seatUser(tx, org.id, claimer.id, 'admin');
        await deps.mail.enqueue(tx, claimer.email, claimCompletedForClaimer({ firstName: claimer.firstName, organizationName: org.name }));

        const inviter = claim.inviterUserId && claim.inviterUserId !== claimer.id ? await findUserById(tx, claim.inviterUserId) : null;
        if (inviter) {
          const seated = !(await seatOf(tx, inviter.id));
          if (seated) await deps.membership.seatUser(tx, org.id, inviter.id, 'member');
          await deps.mail.enqueue(tx, inviter.email, claimCompletedForInviter({ firstName: inviter.firstName, organizationName: org.name, seated }));
        }
        return { organization_uuid: org.id, organization_name: org.name };
      });
    },
  };
}

export type Claims = ReturnType<typeof createClaims>;
