import * as z from 'zod';
import { notification } from '../api/notifications.ts';
import { aiStatus } from '../api/ai.ts';
import { effectiveConfig } from '../api/organizations.ts';
import { referral, vitalSigns } from '../api/patients.ts';
import { evvRecord, mileage, soapNote, timerEvent, visit } from '../api/visits.ts';

/**
 * The rows of the change feed, one shape per feed table (docs/sync-protocol.md, Scope). They
 * are the REST records without what a device derives itself: a visit row carries no nested
 * timer events, mileage or note (those are rows of their own tables, keyed back to the visit
 * by `schedule_uuid`), a patient row no next/last visit. The signature image stays on the
 * server (`signed`/`signed_at` travel; the image is read over REST when needed).
 */

export const patientRow = z
  .object({
    uuid: z.string(),
    first_name: z.string(),
    last_name: z.string(),
    email: z.string().nullable(),
    phone: z.string().nullable(),
    address: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .strict();

export const referralRow = referral
  .pick({
    uuid: true,
    patient_uuid: true,
    status: true,
    discipline: true,
    diagnosis_codes: true,
    referral_source: true,
    start_of_care: true,
    ordered_frequency: true,
    created_at: true,
  })
  .extend({ discharged_at: z.string().nullable() })
  .strict();

export const visitRow = visit
  .pick({
    uuid: true,
    patient_uuid: true,
    referral_uuid: true,
    visit_date: true,
    start_time: true,
    duration_minutes: true,
    status: true,
    visit_type: true,
    address: true,
    notes: true,
    ai_assisted: true,
    completed_at: true,
    created_at: true,
    updated_at: true,
  })
  .extend({ evv: evvRecord })
  .strict();

export const timerEventRow = timerEvent.extend({ schedule_uuid: z.string() }).strict();

export const soapNoteRow = soapNote
  .omit({ signature: true })
  .extend({ schedule_uuid: z.string(), vital_signs: vitalSigns.nullable() })
  .strict();

export const mileageRow = mileage.extend({ schedule_uuid: z.string() }).strict();

/** One row per device user (`id` = the user id): the effective features and terminology. */
export const organizationConfigRow = effectiveConfig
  .extend({ organization: z.object({ uuid: z.string(), name: z.string() }).nullable() })
  .strict();

/** A notification of the device's user: the REST record (PHI-free title and body, ids in `data`). */
export const notificationRow = notification.strict();
/**
 * The AI pipeline's status of one run (id = the transcription uuid), keyed back to its visit
 * by `schedule_uuid`: the same record as GET /ai/status, so a device sees a run complete
 * without polling.
 */
export const aiStatusRow = aiStatus.strict();

/** Feed table → row schema. Tables without a server-side source yet are absent. */
export const FEED_ROWS = {
  patients: patientRow,
  patient_referrals: referralRow,
  visits: visitRow,
  timer_events: timerEventRow,
  soap_notes: soapNoteRow,
  visit_mileage: mileageRow,
  notifications: notificationRow,
  organization_config: organizationConfigRow,
  ai_status: aiStatusRow,
} as const;
export type FeedTable = keyof typeof FEED_ROWS;

export type PatientRow = z.infer<typeof patientRow>;
export type ReferralRow = z.infer<typeof referralRow>;
export type VisitRow = z.infer<typeof visitRow>;
export type TimerEventRow = z.infer<typeof timerEventRow>;
export type SoapNoteRow = z.infer<typeof soapNoteRow>;
export type MileageRow = z.infer<typeof mileageRow>;
export type NotificationRow = z.infer<typeof notificationRow>;
export type OrganizationConfigRow = z.infer<typeof organizationConfigRow>;
export type AiStatusRow = z.infer<typeof aiStatusRow>;
