import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { applyBody, envelope, optimizeBody, routeSuggestion, schedulingPolicy, schedulingPolicyBody } from '@fieldchart/schema/api';
import { auditContextOf } from '../http/audit-context.ts';
import { principalOf } from '../http/authentication.ts';
import { errors, ok } from '../http/reply.ts';
import type { Services } from '../services/index.ts';

const tags = ['Scheduling'];

const SOURCE_NAMES = { google_traffic: 'live traffic', osrm: 'OSRM road routing', great_circle: 'great-circle estimates' } as const;

/** Says when a better configured source failed and which one answered instead. */
function fallbackMessage(preferred: keyof typeof SOURCE_NAMES, used: keyof typeof SOURCE_NAMES): string {
  return preferred === used ? 'Route suggestion' : `Routing service unavailable (${SOURCE_NAMES[preferred]}): ${SOURCE_NAMES[used]} used`;
}

export const schedulingRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get('/scheduling/policy', {
    schema: {
      tags,
      summary: 'The scheduling policy: home base, default visit length, buffer, day start',
      description: 'Defaults until the first PUT: no home base, 45-minute visits, 10-minute buffers, day start 08:00.',
      response: { 200: envelope(schedulingPolicy), ...errors(401) },
    },
    handler: async (req) => ok(await services.schedulingPolicy.get(principalOf(req).userId)),
  });

  app.put('/scheduling/policy', {
    schema: {
      tags,
      summary: 'Change the scheduling policy',
      description:
        'Members left out keep their value; home_base_* null clears the home base. home_base_lat and home_base_lng go together; an address without them is geocoded when a route is planned, and a new address drops coordinates stored for the old one.',
      body: schedulingPolicyBody,
      response: { 200: envelope(schedulingPolicy), ...errors(401, 422) },
    },
    handler: async (req) => ok(await services.schedulingPolicy.put(principalOf(req).userId, req.body), 'Scheduling policy saved'),
  });

  app.post('/scheduling/optimize', {
    schema: {
      tags,
      summary: "Suggest the day's visit order that minimises drive time (changes nothing)",
      description:
        'The exact optimum (Held–Karp) over the day’s non-cancelled visits, from and back to the home base when the policy has one. Suggested start times: from day_start (plus the drive from the home base), or the current first visit’s start with lock_first, then each visit’s duration + buffer_minutes + the next drive leg. routing_source: google_traffic (live traffic, GOOGLE_DISTANCE_MATRIX_KEY), osrm (ROUTING_OSRM_URL) or great_circle (estimates); a configured source that fails hands over to the next and the message says so. Visits whose location cannot be found are listed in unrouted. 422: fewer than 3 visits with a known location, more than 12 visits, or a plan that would run past midnight. See docs/routing.md.',
      body: optimizeBody,
      response: { 200: envelope(routeSuggestion), ...errors(401, 422) },
    },
    handler: async (req) => {
      const r = await services.routePlanner.optimize(await auditContextOf(req), principalOf(req).userId, req.body);
      return ok(r.suggestion, fallbackMessage(r.preferred, r.suggestion.routing_source));
    },
  });

  app.post('/scheduling/apply', {
    schema: {
      tags,
      summary: 'Reschedule the day atomically',
      description:
        'Sets each named visit’s start_time (HH:MM, the clinician’s time zone). All or nothing: an unknown or foreign visit answers 404, an invalid time (or a visit not on date, cancelled, under way or done whose time would change) 422 naming the visit, and nothing changes.',
      body: applyBody,
      response: { 200: envelope(z.object({ changed: z.number().int() })), ...errors(401, 404, 422) },
    },
    handler: async (req) => {
      const r = await services.visitReschedule.rescheduleDay(await auditContextOf(req), principalOf(req).userId, req.body);
      return ok(r, `${r.changed} visit(s) rescheduled`);
    },
  });
};
