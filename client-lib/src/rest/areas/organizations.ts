/**
 * Organizations: finding and joining one, inviting an organization that is not on Fieldchart
 * and claiming it, the caller's own organization (admin work: profile, configuration, join
 * requests, invitations), the invitee's side of invitations, and creating an account from an
 * emailed invitation link.
 */
import type * as z from 'zod';
import type {
  acceptInvitationBody,
  acceptInvitationResult,
  claimBody,
  claimPreview,
  effectiveConfig,
  invitation,
  inviteMemberBody,
  inviteOrganizationBody,
  inviteOtpVerifyBody,
  inviteOtpVerifyResult,
  joinRequest,
  myOrganization,
  organization,
  organizationConfigBody,
  organizationRequestBody,
  organizationSearchQuery,
  setNewPasswordBody,
  signInResult,
  updateOrganizationBody,
} from '@fieldchart/schema/api';
import { ENDPOINTS as E } from '../endpoints.ts';
import type { Invoker } from '../invoke.ts';
import type { AuthWriteOptions, MessageResult, ReadOptions, RequestOptions, WriteOptions } from '../options.ts';

/** A listed organization as search shows it, with the caller's role in it (or `null`). */
export type Organization = z.output<typeof organization>;
/** The caller's organization with its resolved features and terminology. */
export type MyOrganization = z.output<typeof myOrganization>;
/** Features and terminology in effect for the caller, and where they come from. */
export type EffectiveConfig = z.output<typeof effectiveConfig>;
/** A request to join an organization. */
export type JoinRequest = z.output<typeof joinRequest>;
/** An invitation to an organization, from the admin's or the invitee's side. */
export type Invitation = z.output<typeof invitation>;
/** What a claim link shows before signing in (no PHI). */
export type ClaimPreview = z.output<typeof claimPreview>;
/** Query of `GET /organizations`. */
export type OrganizationSearchQuery = Partial<z.output<typeof organizationSearchQuery>>;
/** Body of `POST /organizations/request`. */
export type OrganizationRequestBody = z.input<typeof organizationRequestBody>;
/** Body of `POST /organizations/invite`. */
export type InviteOrganizationBody = z.input<typeof inviteOrganizationBody>;
/** Body of `POST /organizations/claim`: the token from the claim link. */
export type ClaimBody = z.input<typeof claimBody>;
/** Body of `PUT /my-organization`; every member optional. */
export type UpdateOrganizationBody = z.input<typeof updateOrganizationBody>;
/** Body of `PUT /my-organization/config`: overrides by key, `null` clears one. */
export type OrganizationConfigBody = z.input<typeof organizationConfigBody>;
/** Body of `POST /my-organization/invitations`. */
export type InviteMemberBody = z.input<typeof inviteMemberBody>;
/** Body of `POST /accept-invitation`: the token from the emailed link. */
export type AcceptInvitationBody = z.input<typeof acceptInvitationBody>;
/** `data` of `POST /accept-invitation`: who was invited, where. */
export type AcceptInvitationResult = z.output<typeof acceptInvitationResult>;
/** Body of `POST /invite-otp-verify`. */
export type InviteOtpVerifyBody = z.input<typeof inviteOtpVerifyBody>;
/** `data` of `POST /invite-otp-verify`: the `id` that `setNewPassword` takes. */
export type InviteOtpVerifyResult = z.output<typeof inviteOtpVerifyResult>;
/** Body of `POST /set-new-password`. */
export type SetNewPasswordBody = z.input<typeof setNewPasswordBody>;

/** `client.organizations`: finding, joining, inviting and claiming organizations. */
export interface OrganizationsApi {
  /** `GET /organizations`: listed organizations whose name contains `search` (any case). */
  search(query?: OrganizationSearchQuery, options?: ReadOptions): Promise<Organization[]>;
  /** `POST /organizations/request`: asks for a new organization; listed once an operator approves it. */
  request(body: OrganizationRequestBody, options?: AuthWriteOptions): Promise<MessageResult>;
  /** `POST /organizations/{uuid}/join-request`: asks to join. 404 unknown; 409 already asked or seated. */
  requestToJoin(organizationUuid: string, options?: AuthWriteOptions): Promise<MessageResult>;
  /** `GET /my-join-requests`: the caller's pending join requests. */
  myJoinRequests(options?: ReadOptions): Promise<JoinRequest[]>;
  /** `POST /organizations/invite`: invites an organization not on Fieldchart; its contact is mailed a claim link. */
  invite(body: InviteOrganizationBody, options?: AuthWriteOptions): Promise<MessageResult>;
  /** `GET /organizations/claim/{token}`: previews a claim link; needs no session. 404 unknown or used. */
  previewClaim(token: string, options?: RequestOptions): Promise<ClaimPreview>;
  /** `POST /organizations/claim`: claims the organization; the caller becomes its admin. */
  claim(body: ClaimBody, options?: AuthWriteOptions): Promise<MessageResult>;
}

/** `client.myOrganization`: the caller's seat; the admin-only calls answer 403 to members. */
export interface MyOrganizationApi {
  /** `GET /my-organization`. 404 without a seat. */
  get(options?: ReadOptions): Promise<MyOrganization>;
  /** `PUT /my-organization`: the organization's profile (admin). */
  update(body: UpdateOrganizationBody, options?: AuthWriteOptions): Promise<MyOrganization>;
  /** `POST /my-organization/leave`: gives up the seat. 404 without one. */
  leave(options?: AuthWriteOptions): Promise<MessageResult>;
  /** `GET /my-organization/config`: the features and terminology in effect for the caller. */
  config(options?: ReadOptions): Promise<EffectiveConfig>;
  /** `PUT /my-organization/config`: feature and terminology overrides (admin). */
  updateConfig(body: OrganizationConfigBody, options?: AuthWriteOptions): Promise<EffectiveConfig>;
  /** Join requests to the caller's organization (admin). */
  readonly joinRequests: {
    /** `GET /my-organization/join-requests`: the pending ones. */
    list(options?: ReadOptions): Promise<JoinRequest[]>;
    /** `POST /my-organization/join-requests/{uuid}/approve`: seats the clinician as member. 409 not pending. */
    approve(joinRequestUuid: string, options?: AuthWriteOptions): Promise<MessageResult>;
    /** `POST /my-organization/join-requests/{uuid}/reject`. 409 not pending. */
    reject(joinRequestUuid: string, options?: AuthWriteOptions): Promise<MessageResult>;
  };
  /** Invitations the caller's organization sends (admin). */
  readonly invitations: {
    /** `GET /my-organization/invitations`: every invitation sent, with its status. */
    list(options?: ReadOptions): Promise<Invitation[]>;
    /** `POST /my-organization/invitations`: invites a clinician by email; mails a link. */
    send(body: InviteMemberBody, options?: AuthWriteOptions): Promise<MessageResult>;
    /** `DELETE /my-organization/invitations/{uuid}`: revokes a pending invitation. 404 unknown or closed. */
    revoke(invitationUuid: string, options?: ReadOptions): Promise<MessageResult>;
  };
}

/** `client.invitations`: invitations addressed to the caller (needs a verified email). */
export interface InvitationsApi {
  /** `GET /my-invitations`: open invitations to the caller's verified address. */
  mine(options?: ReadOptions): Promise<Invitation[]>;
  /** `POST /my-invitations/{uuid}/accept`: takes the seat. 403 `email_unverified`; 422 already seated. */
  accept(invitationUuid: string, options?: AuthWriteOptions): Promise<MessageResult>;
  /** `POST /my-invitations/{uuid}/decline`. */
  decline(invitationUuid: string, options?: AuthWriteOptions): Promise<MessageResult>;
}

/** `client.invitationSignup`: a new account from an emailed invitation link; no session needed. */
export interface InvitationSignupApi {
  /** `POST /accept-invitation`: opens the link; mails a 6-digit code to the invited address. */
  acceptInvitation(body: AcceptInvitationBody, options?: WriteOptions): Promise<AcceptInvitationResult>;
  /** `POST /invite-otp-verify`: the mailed code for the `id` that `setNewPassword` takes. 401 `invalid_otp`. */
  verifyOtp(body: InviteOtpVerifyBody, options?: WriteOptions): Promise<InviteOtpVerifyResult>;
  /**
   * `POST /set-new-password`: creates the account, seats it and signs it in. Answers a
   * `SignInResult`, written from its schema here so this area does not import accounts.ts.
   */
  setNewPassword(body: SetNewPasswordBody, options?: WriteOptions): Promise<z.output<typeof signInResult>>;
}

export function organizationsApi(call: Invoker): OrganizationsApi {
  return {
    search: (query, o) => call.data(E['organizations.search'], { query }, o),
    request: (body, o) => call.message(E['organizations.request'], { body }, o),
    requestToJoin: (uuid, o) => call.message(E['organizations.requestToJoin'], { params: { uuid } }, o),
    myJoinRequests: (o) => call.data(E['organizations.myJoinRequests'], {}, o),
    invite: (body, o) => call.message(E['organizations.invite'], { body }, o),
    previewClaim: (token, o) => call.data(E['organizations.previewClaim'], { params: { token } }, o),
    claim: (body, o) => call.message(E['organizations.claim'], { body }, o),
  };
}

export function myOrganizationApi(call: Invoker): MyOrganizationApi {
  return {
    get: (o) => call.data(E['myOrganization.get'], {}, o),
    update: (body, o) => call.data(E['myOrganization.update'], { body }, o),
    leave: (o) => call.message(E['myOrganization.leave'], {}, o),
    config: (o) => call.data(E['myOrganization.config'], {}, o),
    updateConfig: (body, o) => call.data(E['myOrganization.updateConfig'], { body }, o),
    joinRequests: {
      list: (o) => call.data(E['myOrganization.joinRequests.list'], {}, o),
      approve: (uuid, o) => call.message(E['myOrganization.joinRequests.approve'], { params: { uuid } }, o),
      reject: (uuid, o) => call.message(E['myOrganization.joinRequests.reject'], { params: { uuid } }, o),
    },
    invitations: {
      list: (o) => call.data(E['myOrganization.invitations.list'], {}, o),
      send: (body, o) => call.message(E['myOrganization.invitations.send'], { body }, o),
      revoke: (uuid, o) => call.message(E['myOrganization.invitations.revoke'], { params: { uuid } }, o),
    },
  };
}

export function invitationsApi(call: Invoker): InvitationsApi {
  return {
    mine: (o) => call.data(E['invitations.mine'], {}, o),
    accept: (uuid, o) => call.message(E['invitations.accept'], { params: { uuid } }, o),
    decline: (uuid, o) => call.message(E['invitations.decline'], { params: { uuid } }, o),
  };
}

export function invitationSignupApi(call: Invoker): InvitationSignupApi {
  return {
    acceptInvitation: (body, o) => call.data(E['invitationSignup.acceptInvitation'], { body }, o),
    verifyOtp: (body, o) => call.data(E['invitationSignup.verifyOtp'], { body }, o),
    setNewPassword: (body, o) => call.data(E['invitationSignup.setNewPassword'], { body }, o),
  };
}
