import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  acceptInvitationBody,
  acceptInvitationResult,
  envelope,
  invitation,
  inviteMemberBody,
  inviteOtpVerifyBody,
  inviteOtpVerifyResult,
  messageOnly,
  setNewPasswordBody,
  signInResult,
} from '@fieldchart/schema/api';
import { principalOf } from '../http/authentication.ts';
import { done, errors, ok } from '../http/reply.ts';
import type { Services } from '../services/index.ts';

const pub = { public: true } as const;
const tags = ['Invitations'];
const uuidParams = z.object({ uuid: z.uuid() });

/** Invitations sent by admins, the invitee's side, and account creation from an invitation. */
export const invitationRoutes: FastifyPluginAsyncZod<{ services: Services }> = async (app, { services }) => {
  const { invitations, invitationSignup } = services;

  app.post('/my-organization/invitations', {
    config: { idempotentWrite: 'lazy' },
    schema: { tags, summary: 'Invite a clinician by email (admin)', body: inviteMemberBody, response: { 200: messageOnly, ...errors(401, 403, 422, 429) } },
    handler: async (req) => {
      await invitations.invite(principalOf(req), req.body);
      return done('Invitation sent');
    },
  });

  app.get('/my-organization/invitations', {
    schema: { tags, summary: 'Every invitation the organization sent, with status (admin)', response: { 200: envelope(z.array(invitation)), ...errors(401, 403) } },
    handler: async (req) => ok(await invitations.listSent(principalOf(req))),
  });

  app.delete('/my-organization/invitations/:uuid', {
    schema: { tags, summary: 'Revoke an invitation (admin)', params: uuidParams, response: { 200: messageOnly, ...errors(401, 403, 404, 409) } },
    handler: async (req) => {
      await invitations.revoke(principalOf(req), req.params.uuid);
      return done('Invitation revoked');
    },
  });

  app.get('/my-invitations', {
    schema: { tags, summary: "Open invitations addressed to the caller's email", response: { 200: envelope(z.array(invitation)), ...errors(401) } },
    handler: async (req) => ok(await invitations.listMine(principalOf(req))),
  });

  app.post('/my-invitations/:uuid/accept', {
    schema: { tags, summary: 'Accept an invitation: seats the caller', params: uuidParams, response: { 200: messageOnly, ...errors(401, 403, 404, 422) } },
    handler: async (req) => {
      const organizationName = await invitations.accept(principalOf(req), req.params.uuid);
      return done(`You joined ${organizationName}`);
    },
  });

  app.post('/my-invitations/:uuid/decline', {
    schema: { tags, summary: 'Decline an invitation', params: uuidParams, response: { 200: messageOnly, ...errors(401, 403, 404) } },
    handler: async (req) => {
      await invitations.decline(principalOf(req), req.params.uuid);
      return done('Invitation declined');
    },
  });

  app.post('/accept-invitation', {
    config: pub,
    schema: { tags, summary: 'Open an emailed invitation link; mails a 6-digit code to the invited address', body: acceptInvitationBody, response: { 200: envelope(acceptInvitationResult), ...errors(404, 422, 429) } },
    handler: async (req) => ok(await invitationSignup.acceptInvitation(req.body.token, req.ip), 'A verification code was sent to your email'),
  });

  app.post('/invite-otp-verify', {
    config: pub,
    schema: { tags, summary: 'Verify the emailed code; answers the id for /set-new-password', body: inviteOtpVerifyBody, response: { 200: envelope(inviteOtpVerifyResult), ...errors(401, 422) } },
    handler: async (req) => ok(await invitationSignup.verifyOtp(req.body.token, req.body.otp)),
  });

  app.post('/set-new-password', {
    config: pub,
    schema: { tags, summary: 'Create the invited account, join the organization and sign in', body: setNewPasswordBody, response: { 200: envelope(signInResult), ...errors(404, 422) } },
    handler: async (req) => ok(await invitationSignup.setNewPassword(req.body), 'Account created'),
  });
};
