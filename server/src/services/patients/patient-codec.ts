import { patients, patientReferrals } from '@fieldchart/schema/db';
import type { PhiCrypto } from '../../security/phi-crypto.ts';

export type PatientRow = typeof patients.$inferSelect;
export type ReferralRow = typeof patientReferrals.$inferSelect;

/** The PHI of a patient, in clear: what the API accepts and answers. */
export interface PatientPhi {
  readonly first_name: string;
  readonly last_name: string;
  readonly email: string | null;
  readonly phone: string | null;
  readonly address: string | null;
}

/*
 * Each value is bound to `patients.<column>:<row id>` (phi-crypto's aadOf), the convention
 * the visits and reports areas use to decrypt names too.
 */
const T = 'patients';

/** The encrypted columns and the blind index for a patient row. */
export function sealPatient(phi: PhiCrypto, id: string, p: PatientPhi) {
  return {
    firstNameEnc: phi.seal(p.first_name, T, 'first_name_enc', id) as string,
    lastNameEnc: phi.seal(p.last_name, T, 'last_name_enc', id) as string,
    emailEnc: phi.seal(p.email, T, 'email_enc', id),
    phoneEnc: phi.seal(p.phone, T, 'phone_enc', id),
    addressEnc: phi.seal(p.address, T, 'address_enc', id),
    nameSearch: phi.ring().nameTokens(p.first_name, p.last_name),
    nameSearchKey: phi.ring().indexKeyId,
  };
}

export function openPatient(phi: PhiCrypto, row: PatientRow): PatientPhi {
  return {
    first_name: phi.open(row.firstNameEnc, T, 'first_name_enc', row.id) ?? '',
    last_name: phi.open(row.lastNameEnc, T, 'last_name_enc', row.id) ?? '',
    email: phi.open(row.emailEnc, T, 'email_enc', row.id),
    phone: phi.open(row.phoneEnc, T, 'phone_enc', row.id),
    address: phi.open(row.addressEnc, T, 'address_enc', row.id),
  };
}

/** Visits the ordered frequency adds up to: `2w4` → 8, `1w1, 2w3` → 7; null without one. */
export function visitsOrdered(frequency: string | null): number | null {
  if (!frequency) return null;
  let total = 0;
  for (const m of frequency.matchAll(/(\d+)\s*w\s*(\d+)/gi)) total += Number(m[1]) * Number(m[2]);
  return total;
}

export interface VisitCounts {
  readonly completed: number;
  readonly scheduled: number;
}

export function referralRecord(r: ReferralRow, counts: VisitCounts) {
  return {
    uuid: r.id,
    patient_uuid: r.patientId,
    status: r.status as 'open' | 'discharged',
    discipline: r.discipline,
    diagnosis_codes: r.diagnosisCodes,
    referral_source: r.referralSource,
    start_of_care: r.startOfCare,
    ordered_frequency: r.orderedFrequency,
    visits_ordered: visitsOrdered(r.orderedFrequency),
    visits_completed: counts.completed,
    visits_scheduled: counts.scheduled,
    created_at: r.createdAt.toISOString(),
  };
}

