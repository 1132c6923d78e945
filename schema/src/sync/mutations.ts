import * as z from 'zod';
import { patientCreateBody, patientUpdateBody } from '../api/patients.ts';
import { mileageBody, soapNoteBody, timerEventsBody, visitRequestBody } from '../api/visits.ts';

/**
 * The arguments of each mutation (docs/sync-protocol.md, Mutations): the REST endpoint's body,
 * plus the path's uuid where REST has one in the path, plus the ids of rows the device creates
 * (generated on the device so it can refer to them offline).
 */
export const MUTATION_ARGS = {
  'patient.create': patientCreateBody.extend({ uuid: z.uuid().optional(), referral_uuid: z.uuid().optional() }),
  'patient.update': patientUpdateBody.extend({ uuid: z.uuid() }),
  'visit.schedule': visitRequestBody.extend({ uuid: z.uuid().optional() }),
  'visit.timer_events': timerEventsBody,
  'visit.mileage': z.object({ uuid: z.uuid(), mileage: mileageBody }),
  /** Sections absent from the args are taken from the server's copy of the visit's draft. */
  'note.submit': soapNoteBody.partial({ subjective: true, objective: true, assessment: true, plan: true }),
} as const;
export type MutationName = keyof typeof MUTATION_ARGS;
export type MutationArgs<N extends MutationName> = z.input<(typeof MUTATION_ARGS)[N]>;
