import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { envelope, messageOnly, subscriptionState, verifyReceiptBody } from '@fieldchart/schema/api';
import { principalOf } from '../http/authentication.ts';
import { done, errors, ok } from '../http/reply.ts';
import type { Services } from '../services/index.ts';
import { pubSubPush } from '../services/subscriptions/google-play.ts';

const tags = ['Subscription'];

/**
 * The app's subscription endpoints, and the two stores' server-to-server notification
 * endpoints. Those are called by Apple and by Google Pub/Sub, not by apps: they sit outside
 * bearer auth (each verifies the store's own signature instead) and outside the app's API
 * description (docs/subscriptions.md documents them).
 */
export const subscriptionRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { subscriptions } = services;

  app.get('/subscription/status', {
    schema: { tags, summary: "The caller's subscription: trial, active, expired or org_managed", response: { 200: envelope(subscriptionState), ...errors(401) } },
    handler: async (req) => ok(await subscriptions.status(principalOf(req))),
  });

  app.post('/subscription/verify-receipt', {
    schema: {
      tags,
      summary: 'Verify an App Store or Google Play purchase with its store and bind it to the caller',
      body: verifyReceiptBody,
      response: { 200: messageOnly, ...errors(401, 409, 422, 503) },
    },
    handler: async (req) => {
      const state = await subscriptions.verifyReceipt(principalOf(req), req.body);
      return done(`Purchase verified; your subscription is ${state.subscription_status} until ${state.expires_at ?? 'unknown'}`);
    },
  });

  app.post('/subscription/notifications/apple', {
    config: { public: true },
    schema: { hide: true, body: z.object({ signedPayload: z.string().min(1) }), response: { 200: messageOnly, ...errors(401, 422, 503) } },
    handler: async (req) => done(`Notification ${await subscriptions.appleNotification(req.body.signedPayload)}`),
  });

  app.post('/subscription/notifications/google', {
    config: { public: true },
    schema: { hide: true, body: pubSubPush, response: { 200: messageOnly, ...errors(401, 422, 503) } },
    handler: async (req) => done(`Notification ${await subscriptions.googleNotification(req.headers.authorization, req.body)}`),
  });
};
