import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  checklistDisciplineParams,
  checklistItem,
  envelope,
  matchChecklistBody,
  matchChecklistResult,
  suggestionsBody,
  suggestionsResult,
} from '@fieldchart/schema/api';
import { z } from 'zod';
import { errors, ok } from '../http/reply.ts';
import type { Services } from '../services/index.ts';

const tags = ['AI documentation'];

export const aiChecklistRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  app.get('/ai/checklist/:discipline', {
    schema: {
      tags,
      summary: 'The documentation checklist of a discipline',
      description:
        'Codes are case-insensitive: PT, OT, SLP, RN; PTA and COTA answer their discipline’s list (ST → SLP, LPN/LVN → RN). Items are what Medicare and payers expect of a home-health visit note; ids are stable.',
      params: checklistDisciplineParams,
      response: { 200: envelope(z.array(checklistItem)), ...errors(401, 404) },
    },
    handler: async (req) => ok(services.aiChecklists.items(req.params.discipline)),
  });

  app.post('/ai/match-checklist', {
    schema: {
      tags,
      summary: 'Which checklist items a transcript covers',
      description:
        'matched_items is keyed by item id: {matched, evidence: {char_start, char_end, text} | null}; evidence is the transcript sentence around the first cue. Nothing is stored.',
      body: matchChecklistBody,
      response: { 200: envelope(matchChecklistResult), ...errors(401, 422) },
    },
    handler: async (req) => ok(services.aiChecklists.match(req.body)),
  });

  app.post('/ai/suggestions', {
    schema: {
      tags,
      summary: 'Prompts for the checklist items a transcript does not cover',
      description: 'Items listed in checked_items (already documented by the clinician) are skipped. Nothing is stored.',
      body: suggestionsBody,
      response: { 200: envelope(suggestionsResult), ...errors(401, 422) },
    },
    handler: async (req) => ok(services.aiChecklists.suggestions(req.body)),
  });
};
