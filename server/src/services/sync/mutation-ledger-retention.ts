/**
 * The mutation ledger's retention: refusals and digests are kept 30 days (docs/sync-protocol.md,
 * Cloned installs). A module of its own so the maintenance service can prune the ledger's
 * tables without importing the batch path above the services.
 */
import { lt, sql } from 'drizzle-orm';
import { syncMutationDigestRuns, syncRejections } from '@fieldchart/schema/db';
import type { Db } from '../../db/database.ts';

/**
 * Removes what the ledger keeps past its use: refusals and digests older than `before` (both
 * are kept as long: a replay older than that is answered as a plain duplicate).
 */
export async function pruneLedger(db: Db, before: Date): Promise<{ rejections: number; digests: number }> {
  const rejections = await db.delete(syncRejections).where(lt(syncRejections.createdAt, before)).returning({ id: syncRejections.mutationId });
  const runs = await db
    .delete(syncMutationDigestRuns)
    .where(lt(syncMutationDigestRuns.createdAt, before))
    .returning({ digests: sql<number>`cardinality(${syncMutationDigestRuns.mutationIds})` });
  return { rejections: rejections.length, digests: runs.reduce((n, r) => n + Number(r.digests), 0) };
}
