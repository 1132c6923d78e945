import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  chartDetail,
  documentRecord,
  envelope,
  generalSummary,
  generalSummaryQuery,
  messageOnly,
  paginated,
  patient,
  patientCreateBody,
  patientCreated,
  patientListQuery,
  patientUpdateBody,
  patientUuidParams,
  referralUuidParams,
  scheduledVisit,
  scheduledVisitsBody,
} from '@fieldchart/schema/api';
import { auditContextOf } from '../http/audit-context.ts';
import { done, errors, ok } from '../http/reply.ts';
import type { Services } from '../services/index.ts';

const tags = ['Patients'];

/** Patients, charts, scheduled visits by referral, the general summary and documents. */
export const patientRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { patients } = services;
  const ctxOf = (req: Parameters<typeof auditContextOf>[0]) => auditContextOf(req);

  app.get('/patient/my-patients', {
    schema: {
      tags,
      summary: "The caller's patients, newest first; search_by_name matches word prefixes, ignoring case and accents",
      querystring: patientListQuery,
      response: { 200: paginated(patient), ...errors(401, 422) },
    },
    handler: async (req) => {
      const { data, meta } = await patients.list(await ctxOf(req), req.query);
      return { status: true as const, data, meta };
    },
  });

  app.get('/patient/chart-details/:referralUuid', {
    schema: { tags, summary: 'The chart of a patient reached through a referral', params: referralUuidParams, response: { 200: envelope(chartDetail), ...errors(401, 404) } },
    handler: async (req) => ok(await patients.chartDetails(await ctxOf(req), req.params.referralUuid)),
  });

  app.get('/patient/general-summary', {
    schema: { tags, summary: "Counts over the caller's patients, visits and notes in a date range", querystring: generalSummaryQuery, response: { 200: envelope(generalSummary), ...errors(401, 422) } },
    handler: async (req) => ok(await patients.generalSummary(await ctxOf(req), req.query.dateRange)),
  });

  app.post('/patient/get-scheduled-visits/:referralUuid', {
    schema: {
      tags,
      summary: "A referral's visits, optionally in one month (filter_month, filter_year)",
      params: referralUuidParams,
      body: scheduledVisitsBody,
      response: { 200: envelope(z.array(scheduledVisit)), ...errors(401, 404, 422) },
    },
    // Both filters are optional, so the app may send no body at all: that is `{}`.
    preValidation: async (req) => {
      (req as { body: unknown }).body ??= {};
    },
    handler: async (req) => ok(await patients.scheduledVisits(await ctxOf(req), req.params.referralUuid, req.body)),
  });

  app.post('/patient/create', {
    config: { idempotentWrite: 'eager' },
    schema: { tags, summary: 'Create a patient and open its referral', body: patientCreateBody, response: { 200: envelope(patientCreated), ...errors(401, 422) } },
    handler: async (req) => ok(await patients.create(await ctxOf(req), req.body), 'Patient created'),
  });

  app.put('/patient/update/:uuid', {
    schema: { tags, summary: "Update a patient's name or contact details", params: patientUuidParams, body: patientUpdateBody, response: { 200: messageOnly, ...errors(401, 404, 422) } },
    handler: async (req) => {
      await patients.update(await ctxOf(req), req.params.uuid, req.body);
      return done('Patient updated');
    },
  });

  app.get('/document/list', {
    schema: { tags: ['Documents'], summary: "The caller's signed visit notes", response: { 200: envelope(z.array(documentRecord)), ...errors(401) } },
    handler: async (req) => ok(await patients.documents(await ctxOf(req))),
  });
};
