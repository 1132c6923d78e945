import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  envelope,
  fcmTokenBody,
  messageOnly,
  mileageBody,
  paginated,
  scheduleUuidParams,
  soapNoteBody,
  timerEventsBody,
  upcomingVisitsQuery,
  visit,
  visitHistoryQuery,
  visitRequestBody,
  visitUuidParams,
} from '@fieldchart/schema/api';
import { auditContextOf } from '../http/audit-context.ts';
import { principalOf } from '../http/authentication.ts';
import { done, errors, ok } from '../http/reply.ts';
import type { Services } from '../services/index.ts';

const tags = ['Visits'];

export const visitRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.post('/schedule-visit-request-save', {
    config: { idempotentWrite: 'lazy' },
    schema: {
      tags,
      summary: 'Schedule a visit',
      description:
        'visit_date and start_time are wall-clock values in the clinician’s time zone (GET /my-settings). patient_uuid must be one of the caller’s patients; the visit is linked to the patient’s open referral and, without an address, uses the patient’s. Duration defaults by visit_type (evaluation 75, routine 45, reassessment 60, discharge 60, supervisory 30 minutes); with neither duration_minutes nor visit_type, the scheduling policy’s default_visit_minutes (45 until set).',
      body: visitRequestBody,
      response: { 200: envelope(z.object({ uuid: z.string() })), ...errors(401, 422) },
    },
    handler: async (req) => ok(await services.visitScheduling.schedule(await auditContextOf(req), principalOf(req).userId, req.body), 'Visit scheduled'),
  });

  app.get('/get-upcomming-visits', {
    schema: {
      tags,
      summary: "Today's and upcoming visits",
      description:
        '"Today" is the calendar date in the clinician’s time zone (or filter_date). today_visit: that day’s visits except cancelled ones, by start time. upcomming_visit: scheduled or in-progress visits after that day, limited by filter — all (no bound), today (none), week (the next 7 days), month (the next 30 days) — at most per_page of each.',
      querystring: upcomingVisitsQuery,
      response: { 200: envelope(z.object({ today: z.string(), today_visit: z.array(visit), upcomming_visit: z.array(visit) })), ...errors(401, 422) },
    },
    handler: async (req) => {
      const caller = principalOf(req);
      return ok(await services.visitQueries.upcoming(auditContextOf(req), caller.userId, req.query, caller.timeZone));
    },
  });

  app.get('/get-visit-history', {
    schema: {
      tags,
      summary: 'Past visits, newest first',
      description: 'Visits before today (clinician’s time zone) or already completed, missed or cancelled. record_type=with_notes keeps those with a submitted SOAP note.',
      querystring: visitHistoryQuery,
      response: { 200: paginated(visit), ...errors(401, 422) },
    },
    handler: async (req) => {
      const page = await services.visitQueries.history(await auditContextOf(req), principalOf(req).userId, req.query);
      return { status: true as const, data: page.data, meta: page.meta };
    },
  });

  app.get('/visit-details/:scheduleUuid', {
    schema: {
      tags,
      summary: 'One visit with its timer events, EVV record, mileage and (once completed) SOAP note',
      params: scheduleUuidParams,
      response: { 200: envelope(visit), ...errors(401, 404) },
    },
    handler: async (req) => ok(await services.visitQueries.details(await auditContextOf(req), principalOf(req).userId, req.params.scheduleUuid)),
  });

  app.post('/visit-timer-events', {
    config: { repeatableWrite: true },
    schema: {
      tags,
      summary: 'Record visit timer events (start_travel → arrive → start_documentation → complete)',
      description:
        'Events are taken in time order. An event with the same type and time as a stored one is the same event (not stored twice); a different time for a recorded type, a step before its predecessor, or a time earlier than the predecessor’s is 422 naming `events.<index>`, and nothing of the batch is stored. The visit’s EVV record (arrival = arrive, departure = complete, with GPS) and drive, on-site and documentation times are derived from the events; arrive moves a scheduled visit to in_progress.',
      body: timerEventsBody,
      response: { 200: messageOnly, ...errors(401, 404, 422) },
    },
    handler: async (req) => {
      const r = await services.visitTimer.record(await auditContextOf(req), principalOf(req).userId, req.body);
      return done(`${r.recorded} event(s) recorded${r.replayed ? `, ${r.replayed} already recorded` : ''}; visit ${r.status}`);
    },
  });

  app.post('/patient-referral-end-visit-note', {
    config: { repeatableWrite: true },
    schema: {
      tags,
      summary: 'Submit the SOAP note; completes the visit',
      description:
        'vital_signs: any object; aliases (bp "120/80", pulse, spo2, temp °F/°C, resp, pain, weight lb/kg, glucose) are normalised, unknown members kept, abnormal or implausible values flagged in soap_note.vital_flags, unreadable or truncated ones in review_flags — never a 422. signature: base64 (or a data: URL) of a PNG or JPEG, recognised by its bytes, at most 512 KB decoded. A visit that already has a note answers 409 (a signed note is not overwritten); a cancelled visit 409.',
      body: soapNoteBody,
      response: { 200: messageOnly, ...errors(401, 404, 409, 422) },
    },
    handler: async (req) => {
      const r = await services.soapNotes.submit(await auditContextOf(req), principalOf(req).userId, req.body);
      return done(`Visit note submitted${r.signed ? ' and signed' : ''}${r.vital_flags.length ? `; abnormal vitals flagged: ${r.vital_flags.join(', ')}` : ''}`);
    },
  });

  app.put('/visit/:uuid/mileage', {
    config: { repeatableWrite: true },
    schema: {
      tags,
      summary: "Record a visit's mileage (travel/onsite split)",
      description:
        'travel_miles + onsite_miles may not exceed total_miles. Last writer wins by recorded_at (device time, default: now): an entry older than the stored one is acknowledged with 200 but not applied, and the message says so.',
      params: visitUuidParams,
      body: mileageBody,
      response: { 200: messageOnly, ...errors(401, 404, 422) },
    },
    handler: async (req) => {
      const r = await services.visitMileage.put(await auditContextOf(req), principalOf(req).userId, req.params.uuid, req.body);
      return done(r.applied ? 'Mileage saved' : `Mileage not applied: a newer entry (recorded at ${r.stored_recorded_at}) is already stored`);
    },
  });

  app.post('/register-fcm-token', {
    schema: {
      tags: ['Settings'],
      summary: 'Register a push-notification (FCM) device token',
      description: 'Printable ASCII without spaces, 100–4096 characters. A token belongs to the last user who registered it.',
      body: fcmTokenBody,
      response: { 200: messageOnly, ...errors(401, 422) },
    },
    handler: async (req) => {
      await services.pushTokens.register(principalOf(req).userId, req.body.fcm_token);
      return done('Push token registered');
    },
  });
};
