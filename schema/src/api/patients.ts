import * as z from 'zod';
import { clinicalYear, isoDate, isoDateTime, optionalText, pathId, text, pageNumber, perPage } from './common.ts';

/*
 * Records the spec leaves "not shown", decided for the app developer: complete, consistent,
 * ISO 8601 times (dates as YYYY-MM-DD, wall-clock times as HH:MM), `null` for an absent
 * single value and `[]` for an absent list.
 */

/** ICD-10-CM code, e.g. M17.11 or R26.81. */
export const icd10Code = text(16)
  .toUpperCase()
  .regex(/^[A-Z][0-9][0-9A-Z](\.[0-9A-Z]{1,4})?$/, 'must be an ICD-10 code such as M17.11');

/** Ordered frequency such as `2w4` (2 visits a week for 4 weeks) or `1w1, 2w3`. */
export const orderedFrequency = text(200)
  .toLowerCase()
  .regex(/^\d{1,2}w\d{1,2}(\s*,\s*\d{1,2}w\d{1,2})*$/, 'must look like 2w4 (visits per week × weeks), comma-separated');

export const referralInput = z.object({
  discipline: text(10).min(1).optional(),
  diagnosis_codes: z.array(icd10Code).max(25).optional(),
  referral_source: optionalText(200),
  start_of_care: isoDate.nullable().optional(),
  ordered_frequency: orderedFrequency.nullable().optional(),
});

export const patientCreateBody = z.object({
  first_name: text(100).min(1, 'is required'),
  last_name: text(100).min(1, 'is required'),
  email: text(254).pipe(z.email('must be a valid email address')).nullable().optional(),
  phone: optionalText(40),
  address: optionalText(500),
  referral: referralInput.optional().describe('Details of the referral opened with the patient'),
});

export const patientUpdateBody = patientCreateBody.omit({ referral: true }).partial().extend({
  first_name: text(100).min(1, 'must not be empty').optional(),
  last_name: text(100).min(1, 'must not be empty').optional(),
});

export const patientListQuery = z.object({
  page: pageNumber,
  per_page: perPage(20),
  search_by_name: text(100).optional(),
});

export const referral = z
  .object({
    uuid: z.string(),
    patient_uuid: z.string(),
    status: z.enum(['open', 'discharged']),
    discipline: z.string().nullable(),
    diagnosis_codes: z.array(z.string()),
    referral_source: z.string().nullable(),
    start_of_care: z.string().nullable(),
    ordered_frequency: z.string().nullable(),
    /** Visits the frequency orders in total (2w4 → 8), null without a frequency. */
    visits_ordered: z.number().int().nullable(),
    visits_completed: z.number().int(),
    visits_scheduled: z.number().int(),
    created_at: isoDateTime,
  })
  .meta({ id: 'Referral' });

export const visitBrief = z
  .object({
    schedule_uuid: z.string(),
    visit_date: z.string(),
    start_time: z.string(),
    status: z.string(),
    visit_type: z.string(),
  })
  .meta({ id: 'VisitBrief' });

export const patient = z
  .object({
    uuid: z.string(),
    referral_uuid: z.string().nullable().describe('The open referral, null once discharged'),
    first_name: z.string(),
    last_name: z.string(),
    full_name: z.string(),
    email: z.string().nullable(),
    phone: z.string().nullable(),
    address: z.string().nullable(),
    discipline: z.string().nullable(),
    next_visit: visitBrief.nullable(),
    last_visit_date: z.string().nullable(),
    created_at: isoDateTime,
    updated_at: isoDateTime,
  })
  .meta({ id: 'Patient' });

const vital = (description: string) => z.number().optional().describe(description);

/**
 * Vital signs as stored and answered: the known vitals under their canonical names and units
 * (normalised from the aliases devices send), `unreadable` holding values sent under a known
 * alias that could not be read, and any other member kept as the device sent it.
 */
export const vitalSigns = z
  .object({
    systolic_bp: vital('mmHg'),
    diastolic_bp: vital('mmHg'),
    heart_rate: vital('beats per minute'),
    respiratory_rate: vital('breaths per minute'),
    temperature_f: vital('°F'),
    oxygen_saturation: vital('SpO₂ %'),
    pain_level: vital('0–10'),
    blood_glucose: vital('mg/dL'),
    weight_lb: vital('pounds'),
    unreadable: z.record(z.string(), z.unknown()).optional().describe('Values sent under a known name that could not be read, as sent'),
  })
  .catchall(z.unknown())
  .meta({ id: 'VitalSigns', description: 'Normalised vital signs; members the server does not know are kept as sent.' });

/**
 * Vital signs as a device sends them: any JSON object. Aliases are accepted and normalised
 * (`bp: "120/80"`, `pulse`/`hr`, `spo2`/`o2_sat`, `temp` in °F or °C, `resp`/`rr`, `pain`,
 * `weight` in lb or kg, `glucose` in mg/dL or mmol/L); values outside the normal range are
 * flagged, never refused (README: "Vital signs").
 */
export const vitalSignsInput = z
  .unknown()
  .meta({
    type: 'object',
    additionalProperties: true,
    description:
      'Any JSON object of vital signs; known names and common aliases are normalised, the rest kept as sent (at most 50 members, 16 KiB, depth 3; what does not fit is dropped and the note flagged for review). Never the reason a note is refused.',
  });

export const documentRecord = z
  .object({
    uuid: z.string(),
    kind: z.literal('visit_note'),
    title: z.string(),
    schedule_uuid: z.string(),
    patient_uuid: z.string().nullable(),
    referral_uuid: z.string().nullable(),
    visit_date: z.string(),
    signed: z.boolean(),
    signed_at: isoDateTime.nullable(),
    created_at: isoDateTime,
  })
  .meta({ id: 'Document' });

export const chartDetail = z
  .object({
    patient,
    referral,
    upcoming_visits: z.array(visitBrief),
    recent_visits: z.array(visitBrief),
    last_note: z
      .object({ schedule_uuid: z.string(), visit_date: z.string(), assessment: z.string(), plan: z.string() })
      .nullable(),
    latest_vital_signs: vitalSigns.nullable(),
    documents: z.array(documentRecord),
  })
  .meta({ id: 'ChartDetail' });

export const scheduledVisitsBody = z.object({
  filter_month: z.string().regex(/^(0[1-9]|1[0-2])$/, 'must be 01–12').optional(),
  filter_year: clinicalYear.optional(),
});

export const scheduledVisit = visitBrief
  .extend({ duration_minutes: z.number().int(), address: z.string().nullable(), has_note: z.boolean() })
  .meta({ id: 'ScheduledVisit' });

export const DATE_RANGES = ['today', 'this_week', 'last_7_days', 'this_month', 'last_30_days', 'last_90_days', 'this_year'] as const;

export const generalSummaryQuery = z.object({
  dateRange: z
    .enum(DATE_RANGES)
    .default('last_30_days')
    .describe('Days counted, in the clinician\'s time zone: today; this_week (Monday to Sunday); last_7_days, last_30_days, last_90_days (ending today); this_month; this_year. Default last_30_days'),
});

export const patientCreated = z
  .object({ uuid: z.string(), referral_uuid: z.string() })
  .meta({ id: 'PatientCreated', description: 'The new patient and the referral opened with it' });

/** Path uuids are plain strings: a malformed one names no record, so it is a 404 like a foreign one. */
export const patientUuidParams = z.object({ uuid: pathId });
export const referralUuidParams = z.object({ referralUuid: pathId });

export const generalSummary = z
  .object({
    date_range: z.enum(DATE_RANGES),
    from: z.string().describe('First day of the range (YYYY-MM-DD, clinician time zone)'),
    to: z.string().describe('Last day of the range, inclusive'),
    time_zone: z.string(),
    patients: z.object({
      total: z.number().int().describe('Patients of the clinician'),
      new: z.number().int().describe('Created in the range'),
      seen: z.number().int().describe('With a completed visit in the range'),
      open_referrals: z.number().int(),
    }),
    visits: z.object({
      total: z.number().int().describe('Visits dated in the range'),
      scheduled: z.number().int(),
      in_progress: z.number().int(),
      completed: z.number().int(),
      cancelled: z.number().int(),
      missed: z.number().int(),
    }),
    notes: z.object({
      submitted: z.number().int().describe('SOAP notes submitted in the range'),
      signed: z.number().int(),
      unsigned: z.number().int(),
    }),
  })
  .meta({ id: 'GeneralSummary' });
