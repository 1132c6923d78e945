/**
 * Many patients created at once (the sync channel's queued `patient.create`): the same rules
 * as `patients.ts` `create` — ids named by the device must be free (a taken one is refused),
 * the patient and its referral ids must differ — checked in memory in order, PHI sealed in
 * memory, then one INSERT of the patients and one of their referrals. No plan when one would
 * be refused, only where (`Refused`): the caller creates that one on its own, and each refusal
 * is its own.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import type { z } from 'zod';
import type { patientCreateBody } from '@fieldchart/schema/api';
import { patientReferrals, patients } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';
import type { ClinicianContext } from '../../http/audit-context.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import { recordsetShape } from '../../db/recordset.ts';
import { allSettled, settled, uuidIn, type BatchPlan, type Refused } from '../batch-plan.ts';
import { createdFields, newPatientRows } from './new-patient.ts';

export interface PatientCreateItem {
  readonly body: z.output<typeof patientCreateBody>;
  readonly uuid?: string | undefined;
  readonly referral_uuid?: string | undefined;
}

type Created = { uuid: string; referral_uuid: string };

// Owner, organization and times are the batch's own, bound once rather than carried per row.
const PATIENT_ROWS = recordsetShape(patients, ['id', 'firstNameEnc', 'lastNameEnc', 'emailEnc', 'phoneEnc', 'addressEnc', 'nameSearch', 'nameSearchKey']);
const REFERRAL_ROWS = recordsetShape(patientReferrals, [
  'id',
  'patientId',
  'status',
  'discipline',
  'diagnosisCodes',
  'referralSource',
  'startOfCare',
  'orderedFrequency',
]);

export function createPatientsBatch(deps: { clock: Clock; phi: PhiCrypto }) {
  const { clock, phi } = deps;
  return {
    async plan(tx: Db, ctx: Omit<ClinicianContext, 'requestId'>, items: readonly PatientCreateItem[]): Promise<BatchPlan<Created> | Refused> {
      if (items.length === 0) return { results: [], audits: [], write: async () => {} };
      const ids = items.map((i) => ({ id: i.uuid ?? randomUUID(), referralId: i.referral_uuid ?? randomUUID(), named: Boolean(i.uuid || i.referral_uuid) }));
      const named = ids.filter((i) => i.named);
      const [patientsTaken, referralsTaken] = await allSettled([
        named.length === 0 ? Promise.resolve([]) : tx.select({ id: patients.id }).from(patients).where(uuidIn(patients.id, named.map((i) => i.id))).execute(),
        named.length === 0
          ? Promise.resolve([])
          : tx.select({ id: patientReferrals.id }).from(patientReferrals).where(uuidIn(patientReferrals.id, named.map((i) => i.referralId))).execute(),
      ]);
      const takenPatients = new Set(patientsTaken.map((r) => r.id));
      const takenReferrals = new Set(referralsTaken.map((r) => r.id));
      const now = clock.now();
      const patientRows: Array<typeof patients.$inferInsert> = [];
      const referralRows: Array<typeof patientReferrals.$inferInsert> = [];
      const results: Created[] = [];
      const audits: BatchPlan<Created>['audits'][number][] = [];
      for (const [n, { body }] of items.entries()) {
        const { id, referralId, named: check } = ids[n] as (typeof ids)[number];
        if (id === referralId) return { refusedAt: n };
        if (check && (takenPatients.has(id) || takenReferrals.has(referralId))) return { refusedAt: n };
        takenPatients.add(id);
        takenReferrals.add(referralId);
        const rows = newPatientRows(phi, ctx, { id, referralId }, body, now);
        patientRows.push(rows.patient);
        referralRows.push(rows.referral);
        const fields = createdFields(body);
        audits.push({ action: 'create', resourceType: 'patient', resourceId: id, details: { fields, referral_uuid: referralId } });
        results.push({ uuid: id, referral_uuid: referralId });
      }
      return {
        results,
        audits,
        async write(db) {
          // One jsonb parameter per table rather than drizzle's multi-row VALUES: building and
          // binding ~15 parameters a row was the largest piece of a drained outbox's own CPU.
          // Issued together, in this order: the referrals' foreign key sees the patients.
          const at = now.toISOString();
          const [owner, organization] = [ctx.actorUserId, ctx.organizationId];
          await settled([
            db.execute(sql`
              insert into ${patients} (${PATIENT_ROWS.columns}, owner_id, organization_id, created_at, updated_at)
              select ${PATIENT_ROWS.values}, ${owner}::uuid, ${organization}::uuid, ${at}::timestamptz, ${at}::timestamptz
              from ${PATIENT_ROWS.from(patientRows)}`),
            db.execute(sql`
              insert into ${patientReferrals} (${REFERRAL_ROWS.columns}, owner_id, organization_id, created_at, updated_at)
              select ${REFERRAL_ROWS.values}, ${owner}::uuid, ${organization}::uuid, ${at}::timestamptz, ${at}::timestamptz
              from ${REFERRAL_ROWS.from(referralRows)}`),
          ]);
        },
      };
    },
  };
}

export type PatientsBatch = ReturnType<typeof createPatientsBatch>;
