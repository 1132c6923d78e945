import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  dashboardActionList,
  envelope,
  problemNote,
  progressStats,
  reportRangeQuery,
  reportSummary,
  therapistEarning,
  timeSavedQuery,
  timeSavedReport,
} from '@fieldchart/schema/api';
import { auditContextOf } from '../http/audit-context.ts';
import { principalOf } from '../http/authentication.ts';
import { errors, ok } from '../http/reply.ts';
import type { Services } from '../services/index.ts';

const tags = ['Dashboard and reports'];

/** Dashboards and reports; every definition is in the README ("Dashboards and reports"). */
export const reportRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { reports } = services;

  app.get('/dashboard-action-list', {
    schema: {
      tags,
      summary: "Today's, pending and this week's completed visits, and alert counts by type",
      response: { 200: envelope(dashboardActionList), ...errors(401) },
    },
    handler: async (req) => ok(await reports.actionList(principalOf(req).userId)),
  });

  app.get('/progress-stats', {
    schema: {
      tags,
      summary: 'Completed visits, documentation time and on-time notes per week, last 8 weeks',
      response: { 200: envelope(progressStats), ...errors(401) },
    },
    handler: async (req) => ok(await reports.progressStats(principalOf(req).userId)),
  });

  app.get('/therapist-earning', {
    schema: {
      tags,
      summary: 'Visit pay and mileage reimbursement: this week, this month, year to date',
      response: { 200: envelope(therapistEarning), ...errors(401) },
    },
    handler: async (req) => ok(await reports.therapistEarning(principalOf(req).userId)),
  });

  app.get('/problem-notes', {
    schema: {
      tags: ['Settings'],
      summary: 'Visits whose documentation is late, unsigned or has unresolved review flags',
      response: { 200: envelope(z.array(problemNote)), ...errors(401) },
    },
    handler: async (req) => ok(await reports.problemNotes(await auditContextOf(req))),
  });

  app.get('/reports/summary', {
    schema: {
      tags,
      summary: 'Totals and one entry per visit in a date range (default: the current year)',
      querystring: reportRangeQuery,
      response: { 200: envelope(reportSummary), ...errors(401, 422) },
    },
    handler: async (req) => ok(await reports.summary(await auditContextOf(req), req.query)),
  });

  app.get('/reports/time-saved', {
    schema: {
      tags,
      summary: 'Documentation time of AI-assisted visits against manual ones (default: the last 90 days)',
      querystring: timeSavedQuery,
      response: { 200: envelope(timeSavedReport), ...errors(401, 403, 422) },
    },
    handler: async (req) => ok(await reports.timeSaved(principalOf(req), req.query)),
  });
};
