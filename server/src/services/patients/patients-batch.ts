/**
 * Many patients created at once (the sync channel's queued `patient.create`): the same rules
 * as `patients.ts` `create` — ids named by the device must be free (a taken one is refused),
 * the patient and its referral ids must differ — checked in memory in order, PHI sealed in
 * memory, then one INSERT of the patients and one of their referrals. No plan (null) when any
 * would be refused: the caller creates them one at a time, and each refusal is its own.
 */
import { randomUUID } from 'node:crypto';
import { inArray } from 'drizzle-orm';
import type { z } from 'zod';
import type { patientCreateBody } from '@fieldchart/schema/api';
import { patientReferrals, patients } from '@fieldchart/schema/db';
import type { Clock } from '../../clock.ts';
import type { Db } from '../../db/database.ts';
import type { ClinicianContext } from '../../http/audit-context.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import { allSettled, settled, type BatchPlan } from '../batch-plan.ts';
import { createdFields, newPatientRows } from './new-patient.ts';

export interface PatientCreateItem {
  readonly body: z.output<typeof patientCreateBody>;
  readonly uuid?: string | undefined;
  readonly referral_uuid?: string | undefined;
}

type Created = { uuid: string; referral_uuid: string };

export function createPatientsBatch(deps: { clock: Clock; phi: PhiCrypto }) {
  const { clock, phi } = deps;
  return {
    async plan(tx: Db, ctx: Omit<ClinicianContext, 'requestId'>, items: readonly PatientCreateItem[]): Promise<BatchPlan<Created> | null> {
      if (items.length === 0) return { results: [], audits: [], write: async () => {} };
      const ids = items.map((i) => ({ id: i.uuid ?? randomUUID(), referralId: i.referral_uuid ?? randomUUID(), named: Boolean(i.uuid || i.referral_uuid) }));
      const named = ids.filter((i) => i.named);
      const [patientsTaken, referralsTaken] = await allSettled([
        named.length === 0 ? Promise.resolve([]) : tx.select({ id: patients.id }).from(patients).where(inArray(patients.id, named.map((i) => i.id))).execute(),
        named.length === 0
          ? Promise.resolve([])
          : tx.select({ id: patientReferrals.id }).from(patientReferrals).where(inArray(patientReferrals.id, named.map((i) => i.referralId))).execute(),
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
        if (id === referralId) return null;
        if (check && (takenPatients.has(id) || takenReferrals.has(referralId))) return null;
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
          // Issued together, in this order: the referrals' foreign key sees the patients.
          await settled([db.insert(patients).values(patientRows).execute(), db.insert(patientReferrals).values(referralRows).execute()]);
        },
      };
    },
  };
}

export type PatientsBatch = ReturnType<typeof createPatientsBatch>;
