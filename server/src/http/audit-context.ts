import type { FastifyRequest } from 'fastify';
import type { AuditContext } from '../services/audit/audit-log.ts';
import { principalOf } from './authentication.ts';

/** An audit context whose actor is known: every authenticated clinician request has one. */
export interface ClinicianContext extends AuditContext {
  readonly actorUserId: string;
}

/**
 * Who is acting on PHI, for `services.audit.around`: the signed-in clinician, the
 * organization they sit in (if any) and the request id that ties the audit row to the log
 * line. The seat comes from the session check (one statement per request), not a second
 * lookup. Routes build it once and pass it to the service; the service scopes every lookup
 * to `actorUserId`.
 */
export function auditContextOf(req: FastifyRequest): ClinicianContext {
  const principal = principalOf(req);
  return { actorUserId: principal.userId, organizationId: principal.seat?.organizationId ?? null, requestId: String(req.id) };
}
