import { z } from 'zod';
import { op } from './operation.ts';

const batchSize = z.number().int().min(1).max(10_000).optional();
const instant = z.iso.datetime({ offset: true, message: 'must be an ISO 8601 time' }).or(z.iso.date({ message: 'must be a date' }));

/**
 * Operator commands for PHI at rest and the audit trail (`fieldchart keys …`,
 * `fieldchart audit export`, `fieldchart audit verify`). On a running embedded server they run inside it (admin
 * socket), so a rotation swaps the server's own key ring in place.
 */
export const clinicalOperations = {
  'keys.status': op(z.object({}), (ctx) => ctx.services.phiKeys.status()),
  'keys.rotate': op(z.object({ batch_size: batchSize }), (ctx, a, progress) => ctx.services.phiKeys.rotate({ batchSize: a.batch_size, progress })),
  'keys.reencrypt': op(z.object({ batch_size: batchSize }), (ctx, a, progress) => ctx.services.phiKeys.reencrypt({ batchSize: a.batch_size, progress })),
  'audit.export': op(
    z.object({ from: instant.optional(), to: instant.optional(), limit: z.number().int().min(1).max(1_000_000).optional() }),
    (ctx, a) =>
      ctx.services.auditExport.export({
        ...(a.from ? { from: new Date(a.from) } : {}),
        ...(a.to ? { to: new Date(a.to) } : {}),
        ...(a.limit ? { limit: a.limit } : {}),
      }),
  ),
  'audit.verify': op(z.object({ chain: z.string().min(1).max(200).optional() }), (ctx, a) =>
    ctx.services.auditVerify.verify(a.chain ? { chain: a.chain } : {}),
  ),
} as const;
