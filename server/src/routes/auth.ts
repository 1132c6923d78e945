import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  changePasswordBody,
  deleteAccountBody,
  envelope,
  messageOnly,
  refreshBody,
  refreshResult,
  registerBody,
  registerResult,
  resetPasswordBody,
  sendOtpBody,
  sendOtpResult,
  signInBody,
  signInResult,
  socialBody,
  verifyOtpBody,
  verifyOtpResult,
} from '@fieldchart/schema/api';
import { principalOf } from '../http/authentication.ts';
import { done, errors, ok } from '../http/reply.ts';
import type { Services } from '../services/index.ts';

const pub = { public: true } as const;
const tags = ['Authentication'];

export const authRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { accounts, passwordReset, sessions } = services;

  app.post('/sign-in', {
    config: pub,
    schema: { tags, summary: 'Sign in with email and password', body: signInBody, response: { 200: envelope(signInResult), ...errors(401, 422, 429) } },
    handler: async (req) => ok(await accounts.signIn(req.body, req.ip)),
  });

  app.post('/sign-in/social', {
    config: pub,
    schema: { tags, summary: 'Sign in with a Google or Apple ID token', body: socialBody, response: { 200: envelope(signInResult), ...errors(401, 422, 503) } },
    handler: async (req) => ok(await accounts.signInSocial(req.body)),
  });

  app.post('/register', {
    config: pub,
    schema: { tags, summary: 'Create an account with email and password', body: registerBody, response: { 200: envelope(registerResult), ...errors(422) } },
    handler: async (req) => ok(await accounts.register(req.body)),
  });

  app.post('/register/social', {
    config: pub,
    schema: { tags, summary: 'Create an account from a Google or Apple ID token', body: socialBody, response: { 200: envelope(registerResult), ...errors(401, 422, 503) } },
    handler: async (req) => ok(await accounts.registerSocial(req.body)),
  });

  app.post('/forgot-password/send-otp', {
    config: pub,
    schema: { tags, summary: 'Email a 6-digit reset code', body: sendOtpBody, response: { 200: envelope(sendOtpResult), ...errors(404, 422, 429) } },
    handler: async (req) => ok(await passwordReset.sendOtp(req.body.email, req.ip), 'A reset code was sent to your email'),
  });

  app.post('/forgot-password/verify-otp', {
    config: pub,
    schema: { tags, summary: 'Exchange the emailed code for a reset token', body: verifyOtpBody, response: { 200: envelope(verifyOtpResult), ...errors(401, 422) } },
    handler: async (req) => ok(await passwordReset.verifyOtp(req.body.token, req.body.otp)),
  });

  app.post('/forgot-password/reset', {
    config: pub,
    schema: { tags, summary: 'Set a new password; signs out every device', body: resetPasswordBody, response: { 200: messageOnly, ...errors(401, 422) } },
    handler: async (req) => {
      await passwordReset.reset(req.body.token, req.body.password);
      return done('Your password was reset; sign in with the new password');
    },
  });

  app.post('/token/refresh', {
    config: pub,
    schema: { tags, summary: 'Exchange a refresh token for a new pair', body: refreshBody, response: { 200: envelope(refreshResult), ...errors(401, 422) } },
    handler: async (req) => ok(await sessions.refresh(req.body.refresh_token)),
  });

  app.post('/logout', {
    schema: { tags, summary: 'Revoke the current session', response: { 200: messageOnly, ...errors(401) } },
    handler: async (req) => {
      await accounts.logout(principalOf(req));
      return done('Signed out');
    },
  });

  app.post('/change-password', {
    schema: { tags, summary: 'Change the password; signs out other devices', body: changePasswordBody, response: { 200: messageOnly, ...errors(401, 422) } },
    handler: async (req) => {
      await accounts.changePassword(principalOf(req), req.body);
      return done('Password changed');
    },
  });

  app.post('/delete-account', {
    schema: { tags, summary: 'Permanently delete the account and its data', body: deleteAccountBody, response: { 200: messageOnly, ...errors(401, 422) } },
    handler: async (req) => {
      await accounts.deleteAccount(principalOf(req), req.body);
      return done('Your account and its data were deleted');
    },
  });
};
