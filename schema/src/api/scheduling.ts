import * as z from 'zod';
import { isoDate, pathId, safeString, text } from './common.ts';

const hhmm = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time (HH:MM, 00:00–23:59)');

export const schedulingPolicy = z
  .object({
    home_base_address: z.string().nullable().describe('Where the day starts and ends; null: no home base'),
    home_base_lat: z.number().nullable(),
    home_base_lng: z.number().nullable(),
    default_visit_minutes: z.number().int().describe('Duration assumed for a visit that names none'),
    buffer_minutes: z.number().int().describe('Slack between one visit’s end and the drive to the next'),
    day_start: z.string().describe('HH:MM in the clinician’s time zone: when the day starts'),
  })
  .meta({ id: 'SchedulingPolicy' });

/** PUT replaces the policy: omitted members keep their stored value, null clears the home base. */
export const schedulingPolicyBody = z
  .object({
    home_base_address: text(500).min(1, 'is required').nullable().optional(),
    home_base_lat: z.number().min(-90).max(90).nullable().optional(),
    home_base_lng: z.number().min(-180).max(180).nullable().optional(),
    default_visit_minutes: z.number().int().min(5).max(480).optional(),
    buffer_minutes: z.number().int().min(0).max(240).optional(),
    day_start: hhmm.optional(),
  })
  .strict()
  .refine((b) => (b.home_base_lat === undefined) === (b.home_base_lng === undefined) && (b.home_base_lat === null) === (b.home_base_lng === null), {
    path: ['home_base_lat'],
    message: 'home_base_lat and home_base_lng go together',
  });

export const optimizeBody = z.object({
  date: isoDate,
  lock_first: z.boolean().optional().describe('Keep the current first visit first, at its current time'),
});

export const routeSuggestion = z
  .object({
    visits: z.array(
      z.object({
        schedule_uuid: z.string(),
        suggested_start_time: z.string(),
        drive_minutes: z.number().describe('The leg reaching this visit (from the home base or the previous visit)'),
        drive_miles: z.number(),
      }),
    ),
    total_drive_minutes: z.number().describe('Every leg, including the drive back to the home base'),
    total_miles: z.number(),
    savings: z.object({ minutes: z.number(), miles: z.number() }).describe('Current order minus suggested order'),
    routing_source: z.enum(['google_traffic', 'osrm', 'great_circle']).describe('Which source gave the travel times: live traffic, OSRM, or great-circle estimates'),
    unrouted: z.array(z.string()).describe('Visits of the day whose location could not be found: left out of the plan'),
  })
  .meta({ id: 'RouteSuggestion' });

export const applyBody = z.object({
  date: isoDate,
  visits: z
    .array(z.object({ schedule_uuid: pathId, start_time: safeString(32) }))
    .min(1)
    .max(50),
});
