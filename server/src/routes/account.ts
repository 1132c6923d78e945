import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  clinicianSettings,
  clinicianSettingsBody,
  completeOnboardingBody,
  DISCIPLINES,
  envelope,
  settingsList,
  updateBasicInfoBody,
  userProfile,
  verifyEmailBody,
  messageOnly,
} from '@fieldchart/schema/api';
import { principalOf } from '../http/authentication.ts';
import { done, errors, ok } from '../http/reply.ts';
import type { Services } from '../services/index.ts';
import { appSettings } from '../services/users/app-settings.ts';

const tags = ['Profile'];

export const accountRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { users, config } = services;

  app.get('/my-profile', {
    schema: { tags, summary: "The caller's profile", response: { 200: envelope(userProfile), ...errors(401) } },
    config: { sessionExtra: users.profileExtra },
    handler: async (req) => ok(await users.profileOfCaller(principalOf(req))),
  });

  app.put('/update-basic-info', {
    schema: { tags, summary: 'Update name, email, phone or address', body: updateBasicInfoBody, response: { 200: envelope(userProfile), ...errors(401, 422) } },
    handler: async (req) => ok(await users.updateBasicInfo(principalOf(req).userId, req.body), 'Profile updated'),
  });

  app.post('/complete-onboarding', {
    schema: { tags, summary: 'Record discipline and license; clears needs_onboarding', body: completeOnboardingBody, response: { 200: envelope(userProfile), ...errors(401, 404, 422) } },
    handler: async (req) => ok(await users.completeOnboarding(principalOf(req).userId, req.body), 'Onboarding complete'),
  });

  app.post('/verify-email/send-otp', {
    schema: { tags, summary: "Mail a 6-digit code to the account's email address", response: { 200: messageOnly, ...errors(401, 409, 429) } },
    handler: async (req) => {
      await services.emailVerification.sendCode(principalOf(req).userId);
      return done('A verification code was sent to your email');
    },
  });

  app.post('/verify-email/verify', {
    schema: { tags, summary: 'Confirm the email address with the mailed code', body: verifyEmailBody, response: { 200: envelope(userProfile), ...errors(401, 422) } },
    handler: async (req) => {
      const { userId } = principalOf(req);
      await services.emailVerification.verify(userId, req.body.otp);
      return ok(await users.profile(userId), 'Email address verified');
    },
  });

  app.get('/my-settings', {
    schema: { tags: ['Settings'], summary: "The clinician's time zone, pay rates and mileage rate", response: { 200: envelope(clinicianSettings), ...errors(401) } },
    handler: async (req) => ok(await services.clinicianSettings.get(principalOf(req).userId)),
  });

  app.put('/my-settings', {
    schema: { tags: ['Settings'], summary: 'Set time zone, per-visit pay rates or mileage rate', body: clinicianSettingsBody, response: { 200: envelope(clinicianSettings), ...errors(401, 422) } },
    handler: async (req) => ok(await services.clinicianSettings.update(principalOf(req).userId, req.body), 'Settings saved'),
  });

  app.get('/therapist-discipline', {
    schema: { tags, summary: 'Discipline codes a clinician can choose', response: { 200: envelope(z.array(z.string())), ...errors(401) } },
    handler: async () => ok([...DISCIPLINES]),
  });

  app.get('/master/setting-list', {
    schema: { tags: ['Settings'], summary: 'Server settings the app needs', response: { 200: envelope(settingsList), ...errors(401) } },
    handler: async () => ok(appSettings(config)),
  });
};
