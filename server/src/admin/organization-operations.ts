import { z } from 'zod';
import { INVITATION_STATUSES, ORGANIZATION_STATUSES } from '@fieldchart/schema/api';
import { op } from './operation.ts';

const organization = z.string().trim().min(1, 'is required').describe('organization uuid or exact name');
const limit = z.number().int().min(1).max(1000).optional();

/** Operator commands for organizations and invitations (`fieldchart org …`, `fieldchart invitation list`). */
export const organizationOperations = {
  'org.list': op(
    z.object({ status: z.enum(ORGANIZATION_STATUSES).optional(), search: z.string().optional(), limit }),
    (ctx, a) => ctx.services.organizationOperator.list(a),
  ),
  'org.show': op(z.object({ organization }), (ctx, a) => ctx.services.organizationOperator.show(a.organization)),
  'org.approve': op(z.object({ organization }), (ctx, a) => ctx.services.organizationOperator.approve(a.organization)),
  'org.connect-back-office': op(z.object({ organization, disconnect: z.boolean().optional() }), (ctx, a) =>
    ctx.services.organizationOperator.setBackOffice(a.organization, !a.disconnect),
  ),
  'org.set-admin': op(z.object({ organization, user: z.string().trim().min(1, 'is required') }), (ctx, a) =>
    ctx.services.organizationOperator.setAdmin(a.organization, a.user),
  ),
  'invitation.list': op(
    z.object({ organization: organization.optional(), status: z.enum(INVITATION_STATUSES).optional(), limit }),
    (ctx, a) => ctx.services.organizationOperator.listInvitations(a),
  ),
} as const;
