import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  effectiveConfig,
  envelope,
  joinRequest,
  messageOnly,
  myOrganization,
  organization,
  organizationConfigBody,
  organizationRequestBody,
  organizationSearchQuery,
  personalFeaturesBody,
  updateOrganizationBody,
} from '@fieldchart/schema/api';
import { principalOf } from '../http/authentication.ts';
import { done, errors, ok } from '../http/reply.ts';
import type { Services } from '../services/index.ts';

const tags = ['Organizations'];
const uuidParams = z.object({ uuid: z.uuid() });

/** Search, my-organization, requests, join requests, leave and configuration. */
export const organizationRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { organizations, joinRequests, membership, features } = services;

  app.get('/organizations', {
    schema: { tags, summary: 'Search listed organizations by name', querystring: organizationSearchQuery, response: { 200: envelope(z.array(organization)), ...errors(401) } },
    handler: async (req) => ok(await organizations.search(principalOf(req), req.query.search)),
  });

  app.get('/my-organization', {
    schema: { tags, summary: "The caller's organization with its effective features", response: { 200: envelope(myOrganization), ...errors(401, 404) } },
    handler: async (req) => ok(await organizations.mine(principalOf(req))),
  });

  app.put('/my-organization', {
    schema: { tags, summary: "Update the organization's profile (admin)", body: updateOrganizationBody, response: { 200: envelope(myOrganization), ...errors(401, 403, 422) } },
    handler: async (req) => ok(await organizations.update(principalOf(req), req.body), 'Organization updated'),
  });

  app.post('/organizations/request', {
    config: { idempotentWrite: 'eager' },
    schema: { tags, summary: 'Ask for a new organization; unlisted until an operator approves it', body: organizationRequestBody, response: { 200: messageOnly, ...errors(401, 422) } },
    handler: async (req) => {
      await organizations.request(principalOf(req), req.body);
      return done('Organization requested; it will be listed once approved');
    },
  });

  app.post('/organizations/:uuid/join-request', {
    schema: { tags, summary: 'Ask to join an organization', params: uuidParams, response: { 200: messageOnly, ...errors(401, 404, 409) } },
    handler: async (req) => {
      await joinRequests.create(principalOf(req), req.params.uuid);
      return done('Join request sent; an admin of the organization will review it');
    },
  });

  app.get('/my-join-requests', {
    schema: { tags, summary: "The caller's pending join requests", response: { 200: envelope(z.array(joinRequest)), ...errors(401) } },
    handler: async (req) => ok(await joinRequests.listMine(principalOf(req))),
  });

  app.get('/my-organization/join-requests', {
    schema: { tags, summary: "The organization's pending join requests (admin)", response: { 200: envelope(z.array(joinRequest)), ...errors(401, 403) } },
    handler: async (req) => ok(await joinRequests.listForAdmin(principalOf(req))),
  });

  app.post('/my-organization/join-requests/:uuid/approve', {
    schema: { tags, summary: 'Approve a join request: seats the clinician as member (admin)', params: uuidParams, response: { 200: messageOnly, ...errors(401, 403, 404, 409) } },
    handler: async (req) => {
      await joinRequests.approve(principalOf(req), req.params.uuid);
      return done('Join request approved');
    },
  });

  app.post('/my-organization/join-requests/:uuid/reject', {
    schema: { tags, summary: 'Reject a join request (admin)', params: uuidParams, response: { 200: messageOnly, ...errors(401, 403, 404, 409) } },
    handler: async (req) => {
      await joinRequests.reject(principalOf(req), req.params.uuid);
      return done('Join request rejected');
    },
  });

  app.post('/my-organization/leave', {
    schema: { tags, summary: 'Leave the organization', response: { 200: messageOnly, ...errors(401, 404) } },
    handler: async (req) => {
      const left = await membership.leave(principalOf(req).userId);
      return done(`You left ${left.organization_name}; your subscription status is now ${left.subscription_status}`);
    },
  });

  app.get('/my-organization/config', {
    schema: { tags, summary: "The caller's effective features and terminology", response: { 200: envelope(effectiveConfig), ...errors(401) } },
    handler: async (req) => ok(await features.config(principalOf(req))),
  });

  app.put('/my-organization/config', {
    schema: { tags, summary: "Set the organization's feature and terminology overrides (admin)", body: organizationConfigBody, response: { 200: envelope(effectiveConfig), ...errors(401, 403, 422) } },
    handler: async (req) => ok(await features.updateOrganization(principalOf(req), req.body), 'Configuration updated'),
  });

  app.put('/my-settings/features', {
    schema: { tags: ['Settings'], summary: 'Set personal feature overrides (apply while not in an organization)', body: personalFeaturesBody, response: { 200: envelope(effectiveConfig), ...errors(401, 422) } },
    handler: async (req) => {
      const { config, seated } = await features.updatePersonal(principalOf(req), req.body);
      return ok(
        config,
        seated
          ? "Saved. Personal settings apply only while you are not in an organization: your organization's settings are in effect now"
          : 'Feature settings saved',
      );
    },
  });
};
