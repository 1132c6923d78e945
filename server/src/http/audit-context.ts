import type { FastifyRequest } from 'fastify';
import type { AuditContext } from '../services/audit/audit-log.ts';
import type { Seat } from '../services/organizations/seats.ts';
import { principalOf } from './authentication.ts';

/** An audit context whose actor is known: every authenticated clinician request has one. */
export interface ClinicianContext extends AuditContext {
  readonly actorUserId: string;
}

/**
 * Who is acting on PHI, for `services.audit.around`: the signed-in clinician, the
 * organization they sit in (if any) and the request id that ties the audit row to the log
 * line. Routes build it once and pass it to the service; the service scopes every lookup to
 * `actorUserId`.
 */
export async function auditContextOf(
  req: FastifyRequest,
  services: { seatOf(userId: string): Promise<Seat | null> },
): Promise<ClinicianContext> {
  const principal = principalOf(req);
  const seat = await services.seatOf(principal.userId);
  return { actorUserId: principal.userId, organizationId: seat?.organizationId ?? null, requestId: String(req.id) };
}
