import * as z from 'zod';
import { isoDate, isoDateTime, pathId, safeString, text, timestamp, pageNumber, perPage } from './common.ts';
import { vitalSigns, vitalSignsInput } from './patients.ts';

export const TIMER_EVENT_TYPES = ['start_travel', 'arrive', 'start_documentation', 'complete'] as const;
export const VISIT_TYPES = ['evaluation', 'routine', 'reassessment', 'discharge', 'supervisory'] as const;

const hhmm = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time (HH:MM, 00:00–23:59)');

export const visitRequestBody = z.object({
  patient_uuid: z.uuid().optional(),
  visit_date: isoDate,
  start_time: hhmm,
  notes: text(5000).optional(),
  address: text(500).optional(),
  visit_type: z.enum(VISIT_TYPES).optional(),
  duration_minutes: z.number().int().min(5).max(480).optional(),
});

export const timerEventInput = z.object({
  event_type: z.enum(TIMER_EVENT_TYPES),
  event_time: timestamp,
  latitude: z.number().min(-90).max(90),
  longitude: z.number().min(-180).max(180),
  accuracy: z.number().min(0).max(100_000),
});

export const timerEventsBody = z.object({
  schedule_uuid: z.uuid(),
  events: z.array(timerEventInput).min(1).max(20),
});

export const soapNoteBody = z.object({
  schedule_uuid: z.uuid(),
  subjective: text(20_000).min(1, 'is required'),
  objective: text(20_000).min(1, 'is required'),
  assessment: text(20_000).min(1, 'is required'),
  plan: text(20_000).min(1, 'is required'),
  vital_signs: vitalSignsInput.optional(),
  signature: safeString(2_000_000).optional().describe('Base64 PNG or JPEG'),
});

/**
 * Miles are stored as numeric(10,2): each value is rounded to cents here, half away from zero on
 * its decimal form as PostgreSQL does, so the split check sees the values that will be stored.
 */
const toCents = (n: number): number => {
  const [mantissa, exponent = '0'] = String(n).split('e');
  return Number(`${Math.round(Number(`${mantissa}e${Number(exponent) + 2}`))}e-2`);
};
const miles = z.number().min(0).max(2000).overwrite(toCents);

export const mileageBody = z
  .object({
    total_miles: miles,
    travel_miles: miles.optional(),
    onsite_miles: miles.optional(),
    recorded_at: timestamp.optional().describe('Device time of the entry; the later entry wins'),
  })
  .refine((m) => Math.round((m.travel_miles ?? 0) * 100) + Math.round((m.onsite_miles ?? 0) * 100) <= Math.round(m.total_miles * 100), {
    path: ['total_miles'],
    message: 'must be at least travel_miles + onsite_miles',
  });

/**
 * FCM registration tokens are opaque; Fieldchart accepts printable ASCII without spaces,
 * 100–4096 characters (real tokens are ~150–250).
 */
export const fcmTokenBody = z.object({
  fcm_token: z
    .string()
    .min(100, 'must be an FCM registration token (at least 100 characters)')
    .max(4096, 'must be at most 4096 characters')
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces'),
});

// Not z.uuid(): a malformed id must answer the service's visit_not_found 404, the same body as
// an unknown or foreign visit (the patients params do the same).
export const scheduleUuidParams = z.object({ scheduleUuid: pathId });
export const visitUuidParams = z.object({ uuid: pathId });

export const timerEvent = z
  .object({
    uuid: z.string(),
    event_type: z.enum(TIMER_EVENT_TYPES),
    event_time: isoDateTime,
    latitude: z.number().nullable(),
    longitude: z.number().nullable(),
    accuracy: z.number().nullable(),
  })
  .meta({ id: 'TimerEvent' });

const place = z.object({ latitude: z.number(), longitude: z.number(), accuracy: z.number().nullable() }).nullable();

export const evvRecord = z
  .object({
    travel_started_at: isoDateTime.nullable().describe('start_travel'),
    arrived_at: isoDateTime.nullable().describe('arrive: the EVV arrival'),
    arrival_location: place,
    documentation_started_at: isoDateTime.nullable().describe('start_documentation'),
    departed_at: isoDateTime.nullable().describe('complete: the EVV departure'),
    departure_location: place,
    drive_minutes: z.number().nullable().describe('start_travel → arrive, to 0.1 minute'),
    onsite_minutes: z.number().nullable().describe('arrive → complete'),
    documentation_minutes: z.number().nullable().describe('start_documentation → complete'),
  })
  .meta({ id: 'EvvRecord', description: 'Electronic visit verification, derived from the timer events' });

export const mileage = z
  .object({
    total_miles: z.number(),
    travel_miles: z.number().nullable(),
    onsite_miles: z.number().nullable(),
    recorded_at: isoDateTime,
  })
  .meta({ id: 'Mileage' });

export const soapNote = z
  .object({
    uuid: z.string(),
    subjective: z.string(),
    objective: z.string(),
    assessment: z.string(),
    plan: z.string(),
    vital_signs: vitalSigns.nullable(),
    vital_flags: z.array(z.string()),
    signed: z.boolean(),
    signed_at: isoDateTime.nullable(),
    signature: z.string().nullable().describe('data: URL of the signature image'),
    signature_mime: z.enum(['image/png', 'image/jpeg']).nullable(),
    review_flags: z.array(z.string()),
    submitted_at: isoDateTime,
  })
  .meta({ id: 'SoapNote' });

export const visit = z
  .object({
    uuid: z.string(),
    schedule_uuid: z.string(),
    patient_uuid: z.string().nullable(),
    referral_uuid: z.string().nullable(),
    patient: z.object({ uuid: z.string(), first_name: z.string(), last_name: z.string() }).nullable(),
    visit_date: z.string(),
    start_time: z.string(),
    duration_minutes: z.number().int(),
    status: z.enum(['scheduled', 'in_progress', 'completed', 'cancelled', 'missed']),
    visit_type: z.string(),
    address: z.string().nullable(),
    notes: z.string().nullable(),
    ai_assisted: z.boolean(),
    has_note: z.boolean(),
    completed_at: isoDateTime.nullable(),
    evv: evvRecord,
    timer_events: z.array(timerEvent),
    mileage: mileage.nullable(),
    soap_note: soapNote.nullable().describe('Visit details only, once the visit is completed; null in lists (see has_note)'),
    created_at: isoDateTime,
    updated_at: isoDateTime,
  })
  .meta({ id: 'Visit' });

export const upcomingVisitsQuery = z.object({
  per_page: perPage(50),
  filter: z.enum(['all', 'today', 'week', 'month']).default('all').describe('Window of upcomming_visit after today'),
  filter_date: isoDate.optional().describe('Treat this date as "today" (the clinician’s time zone by default)'),
});

export const visitHistoryQuery = z.object({
  per_page: perPage(20),
  page: pageNumber,
  record_type: z.enum(['all', 'with_notes']).default('all'),
});
