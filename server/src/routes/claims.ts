import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { claimBody, claimPreview, envelope, inviteOrganizationBody, messageOnly, pathId } from '@fieldchart/schema/api';
import { principalOf } from '../http/authentication.ts';
import { done, errors, ok } from '../http/reply.ts';
import type { Services } from '../services/index.ts';

const tags = ['Organizations'];

/** A clinician invites an organization to Fieldchart; its contact claims it. */
export const claimRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { claims } = services;

  app.post('/organizations/invite', {
    config: { idempotentWrite: 'lazy' },
    schema: { tags, summary: 'Invite an organization that is not on Fieldchart; mails its contact a claim link', body: inviteOrganizationBody, response: { 200: messageOnly, ...errors(401, 422, 429) } },
    handler: async (req) => {
      await claims.invite(principalOf(req), req.body);
      return done('Invitation sent to the organization contact');
    },
  });

  app.get('/organizations/claim/:token', {
    config: { public: true },
    schema: { tags, summary: 'Preview a claim link (no PHI)', params: z.object({ token: pathId.describe('The token from the emailed claim link') }), response: { 200: envelope(claimPreview), ...errors(404) } },
    handler: async (req) => ok(await claims.preview(req.params.token)),
  });

  app.post('/organizations/claim', {
    schema: { tags, summary: 'Claim an invited organization: lists it and seats the caller as admin', body: claimBody, response: { 200: messageOnly, ...errors(401, 404, 422) } },
    handler: async (req) => {
      const claimed = await claims.claim(principalOf(req), req.body.token);
      return done(`You are now the admin of ${claimed.organization_name}`);
    },
  });
};
