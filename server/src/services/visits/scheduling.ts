/** Scheduling a visit: the patient must be the caller's; address and duration have defaults. */
import { and, desc, eq, isNull } from 'drizzle-orm';
import type * as z from 'zod';
import type { visitRequestBody } from '@fieldchart/schema/api';
import { defaultDurationMinutes } from '@fieldchart/schema/rules';
import { patientReferrals, patients, schedulingPolicies, visits } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';
import { Conflict, Invalid } from '../../errors.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import type { AuditContext, AuditLog } from '../audit/audit-log.ts';
import { type ClinicianSettingsService } from '../clinician-settings.ts';
import { wallTimeExists } from '@fieldchart/schema/rules';
import { seatOf } from '../organizations/seats.ts';

export type VisitRequest = z.infer<typeof visitRequestBody>;

export function createScheduling(deps: { db: Db; clock: Clock; phi: PhiCrypto; audit: AuditLog; settings: ClinicianSettingsService }) {
  const { clock, phi, audit, settings } = deps;

  return {
    /** `visitId`: a device scheduling offline names the id itself (the sync channel); a taken id is 409. */
    async schedule(ctx: AuditContext, ownerId: string, input: VisitRequest, visitId?: string): Promise<{ uuid: string }> {
      const id = visitId ?? crypto.randomUUID();
      return audit.around(ctx, { action: 'create', resourceType: 'visit', resourceId: id }, async (tx, note) => {
        if (visitId) {
          const [taken] = await tx.select({ id: visits.id }).from(visits).where(eq(visits.id, visitId));
          if (taken) throw new Conflict('That id is already in use', 'id_taken');
        }
        const { time_zone: timeZone } = await settings.get(ownerId, tx);
        if (!wallTimeExists(input.visit_date, input.start_time, timeZone)) {
          throw Invalid.field('start_time', `does not exist in ${timeZone} on that date (daylight-saving change)`);
        }
        let patientId: string | null = null;
        let referralId: string | null = null;
        let address = input.address || null;
        if (input.patient_uuid) {
          const [patient] = await tx
            .select({ id: patients.id, addressEnc: patients.addressEnc, organizationId: patients.organizationId })
            .from(patients)
            .where(and(eq(patients.id, input.patient_uuid), eq(patients.ownerId, ownerId), isNull(patients.deletedAt)));
          // Unknown and foreign patients read the same: nothing tells the caller which it was.
          if (!patient) throw Invalid.field('patient_uuid', 'is not one of your patients', 'unknown_patient');
          patientId = patient.id;
          address ??= phi.open(patient.addressEnc, 'patients', 'address_enc', patient.id);
          const [referral] = await tx
            .select({ id: patientReferrals.id })
            .from(patientReferrals)
            .where(
              and(
                eq(patientReferrals.patientId, patient.id),
                eq(patientReferrals.ownerId, ownerId),
                eq(patientReferrals.status, 'open'),
                isNull(patientReferrals.deletedAt),
              ),
            )
            .orderBy(desc(patientReferrals.createdAt))
            .limit(1);
          referralId = referral?.id ?? null;
          note({ details: { patient_id: patientId } });
        }
        const seat = await seatOf(tx, ownerId);
        const visitType = input.visit_type ?? 'routine';
        // A visit that names neither duration nor type takes the clinician's policy default (PUT /scheduling/policy).
        const [policy] = input.duration_minutes === undefined && input.visit_type === undefined
          ? await tx.select({ minutes: schedulingPolicies.defaultVisitMinutes }).from(schedulingPolicies).where(eq(schedulingPolicies.userId, ownerId))
          : [];
        const now = clock.now();
        await tx.insert(visits).values({
          id,
          ownerId,
          organizationId: seat?.organizationId ?? null,
          patientId,
          referralId,
          visitDate: input.visit_date,
          startTime: input.start_time,
          durationMinutes: input.duration_minutes ?? policy?.minutes ?? defaultDurationMinutes(visitType),
          visitType,
          status: 'scheduled',
          addressEnc: phi.seal(address, 'visits', 'address_enc', id),
          notesEnc: phi.seal(input.notes || null, 'visits', 'notes_enc', id),
          createdAt: now,
          updatedAt: now,
        });
        return { uuid: id };
      });
    },
  };
}
