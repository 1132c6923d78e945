/**
 * The rows of a new patient and its open referral, as both ways of creating one write them
 * (one at a time, patients.ts; many at once from the sync channel, patients-batch.ts).
 */
import type { z } from 'zod';
import type { patientCreateBody } from '@fieldchart/schema/api';
import type { patientReferrals, patients } from '@fieldchart/schema/db';
import type { ClinicianContext } from '../../http/audit-context.ts';
import type { PhiCrypto } from '../../security/phi-crypto.ts';
import { sealPatient } from './patient-codec.ts';

type CreateBody = z.output<typeof patientCreateBody>;

/** The fields a create named (the audit entry lists them, never their values). */
export function createdFields(body: CreateBody): string[] {
  return Object.keys(body).filter((k) => body[k as keyof CreateBody] != null);
}

export function newPatientRows(
  phi: PhiCrypto,
  ctx: Pick<ClinicianContext, 'actorUserId' | 'organizationId'>,
  ids: { readonly id: string; readonly referralId: string },
  body: CreateBody,
  now: Date,
): { patient: typeof patients.$inferInsert; referral: typeof patientReferrals.$inferInsert } {
  const owner = { ownerId: ctx.actorUserId, organizationId: ctx.organizationId };
  const r = body.referral ?? {};
  return {
    patient: {
      id: ids.id,
      ...owner,
      ...sealPatient(phi, ids.id, { first_name: body.first_name, last_name: body.last_name, email: body.email ?? null, phone: body.phone ?? null, address: body.address ?? null }),
      createdAt: now,
      updatedAt: now,
    },
    referral: {
      id: ids.referralId,
      patientId: ids.id,
      ...owner,
      status: 'open',
      discipline: r.discipline ?? null,
      diagnosisCodes: r.diagnosis_codes ?? [],
      referralSource: r.referral_source ?? null,
      startOfCare: r.start_of_care ?? null,
      orderedFrequency: r.ordered_frequency ?? null,
      createdAt: now,
      updatedAt: now,
    },
  };
}
