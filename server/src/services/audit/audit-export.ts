import type { Db } from '../../db/database.ts';
import type { AuditLog } from './audit-log.ts';

/**
 * `fieldchart audit export`: the trail in [from, to), oldest first. Reading the trail is
 * itself recorded (after the read, so the export does not contain its own entry).
 */
export function createAuditExport(deps: { db: Db; audit: AuditLog }) {
  const { db, audit } = deps;
  return {
    async export(opts: { from?: Date; to?: Date; limit?: number }) {
      const entries = await audit.export(opts);
      await audit.record(
        db,
        { actorUserId: null, organizationId: null, requestId: null },
        {
          action: 'export',
          resourceType: 'audit_log',
          details: { via: 'operator', from: opts.from?.toISOString() ?? null, to: opts.to?.toISOString() ?? null, count: entries.length },
        },
        'success',
      );
      return entries;
    },
  };
}
