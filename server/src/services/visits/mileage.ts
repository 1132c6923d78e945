/**
 * Mileage of a visit, last writer wins by the device's `recorded_at`: a write older than the
 * stored one is acknowledged (200) but changes nothing, and the answer says so. Equal times:
 * the later arrival wins (a device retrying its own write).
 */
import { eq } from 'drizzle-orm';
import type * as z from 'zod';
import type { mileageBody } from '@fieldchart/schema/api';
import { visitMileage } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import type { AuditContext, AuditLog } from '../audit/audit-log.ts';
import { findOwnedVisit } from './visit-records.ts';

export type MileageInput = z.infer<typeof mileageBody>;

export function createMileage(deps: { clock: Clock; audit: AuditLog }) {
  const { clock, audit } = deps;
  return {
    async put(ctx: AuditContext, ownerId: string, visitId: string, input: MileageInput): Promise<{ applied: boolean; stored_recorded_at: string }> {
      return audit.around(ctx, { action: 'update', resourceType: 'visit_mileage', resourceId: visitId }, async (tx, note) => {
        const visit = await findOwnedVisit(tx, ownerId, visitId, { forUpdate: true });
        const now = clock.now();
        const recordedAt = input.recorded_at ? new Date(input.recorded_at) : now;
        const [current] = await tx.select().from(visitMileage).where(eq(visitMileage.visitId, visit.id));
        if (current && current.recordedAt.getTime() > recordedAt.getTime()) {
          note({ details: { applied: false } });
          return { applied: false, stored_recorded_at: current.recordedAt.toISOString() };
        }
        const values = {
          totalMiles: input.total_miles,
          travelMiles: input.travel_miles ?? null,
          onsiteMiles: input.onsite_miles ?? null,
          recordedAt,
          updatedAt: now,
          deletedAt: null,
        };
        if (current) await tx.update(visitMileage).set(values).where(eq(visitMileage.visitId, visit.id));
        else await tx.insert(visitMileage).values({ visitId: visit.id, ownerId, ...values, createdAt: now });
        note({ details: { applied: true } });
        return { applied: true, stored_recorded_at: recordedAt.toISOString() };
      });
    },
  };
}
