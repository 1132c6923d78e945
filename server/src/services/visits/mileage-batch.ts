/**
 * Mileage of many visits at once (the sync channel's queued `visit.mileage`): the same rules
 * as `mileage.ts` — the visit must be the caller's; the later `recorded_at` wins, an equal one
 * too (the later arrival) — decided in memory in order, then one upsert of each touched
 * visit's final mileage. No plan when a visit is not the caller's, only where the first item
 * naming one is (`Refused`).
 */
import { and, eq, isNull, sql } from 'drizzle-orm';
import { visitMileage, visits } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';
import { recordsetShape } from '../../db/recordset.ts';
import { allSettled, uuidIn, type BatchPlan, type Refused } from '../batch-plan.ts';
import type { MileageInput } from './mileage.ts';

export interface MileageItem {
  readonly uuid: string;
  readonly mileage: MileageInput;
}

interface Stored {
  readonly totalMiles: number;
  readonly travelMiles: number | null;
  readonly onsiteMiles: number | null;
  readonly recordedAt: Date;
}

const MILEAGE_ROWS = recordsetShape(visitMileage, ['visitId', 'totalMiles', 'travelMiles', 'onsiteMiles', 'recordedAt']);

export function createMileageBatch(deps: { clock: Clock }) {
  return {
    async plan(tx: Db, ownerId: string, items: readonly MileageItem[]): Promise<BatchPlan<{ applied: boolean }> | Refused> {
      if (items.length === 0) return { results: [], audits: [], write: async () => {} };
      const ids = [...new Set(items.map((i) => i.uuid))];
      // The lock, then the read, issued together (pipelined; they run in this order).
      const [owned, stored] = await allSettled([
        tx
          .select({ id: visits.id })
          .from(visits)
          .where(and(uuidIn(visits.id, ids), eq(visits.ownerId, ownerId), isNull(visits.deletedAt)))
          .orderBy(visits.id)
          .for('update')
          .execute(),
        tx.select().from(visitMileage).where(uuidIn(visitMileage.visitId, ids)).execute(),
      ]);
      if (owned.length !== ids.length) {
        // A visit that is not the clinician's (or not there): the first item naming it is refused.
        const mine = new Set(owned.map((v) => v.id));
        return { refusedAt: items.findIndex((i) => !mine.has(i.uuid)) };
      }
      const current = new Map<string, Stored>(stored.map((m) => [m.visitId, m]));
      const now = deps.clock.now();
      const final = new Map<string, Stored>();
      const results: Array<{ applied: boolean }> = [];
      const audits: BatchPlan<{ applied: boolean }>['audits'][number][] = [];
      for (const { uuid, mileage } of items) {
        const recordedAt = mileage.recorded_at ? new Date(mileage.recorded_at) : now;
        const stored = current.get(uuid);
        const applied = !(stored && stored.recordedAt.getTime() > recordedAt.getTime());
        if (applied) {
          const next = { totalMiles: mileage.total_miles, travelMiles: mileage.travel_miles ?? null, onsiteMiles: mileage.onsite_miles ?? null, recordedAt };
          current.set(uuid, next);
          final.set(uuid, next);
        }
        results.push({ applied });
        audits.push({ action: 'update', resourceType: 'visit_mileage', resourceId: uuid, details: { applied } });
      }
      return {
        results,
        audits,
        async write(db) {
          if (final.size === 0) return;
          const at = now.toISOString();
          await db.execute(sql`
            insert into ${visitMileage} (${MILEAGE_ROWS.columns}, owner_id, created_at, updated_at, deleted_at)
            select ${MILEAGE_ROWS.values}, ${ownerId}::uuid, ${at}::timestamptz, ${at}::timestamptz, null
            from ${MILEAGE_ROWS.from([...final.entries()].map(([visitId, m]) => ({ visitId, ...m })))}
            on conflict (visit_id) do update set
              total_miles = excluded.total_miles, travel_miles = excluded.travel_miles, onsite_miles = excluded.onsite_miles,
              recorded_at = excluded.recorded_at, updated_at = excluded.updated_at, deleted_at = null`);
        },
      };
    },
  };
}

export type MileageBatch = ReturnType<typeof createMileageBatch>;
