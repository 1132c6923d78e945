/**
 * Every endpoint of the clinician API in one table: the HTTP method, the path as the server
 * registers it (typos included: `get-upcomming-visits`), whether it needs a session, and the
 * schema of its success body, taken from @fieldchart/schema like the server's own.
 *
 * The key of each entry is the client method that calls it (`'visits.upcoming'` is
 * `client.visits.upcoming`). A test compares this table with the routes in the server's
 * OpenAPI document, so a route added to the server without a client method fails the build.
 */
import * as z from 'zod';
import {
  acceptInvitationResult,
  chatMessage,
  conversation,
  notification,
  checklistItem,
  aiStatus,
  chartDetail,
  claimPreview,
  clinicianSettings,
  dashboardActionList,
  documentRecord,
  effectiveConfig,
  envelope,
  generalSummary,
  invitation,
  inviteOtpVerifyResult,
  joinRequest,
  matchChecklistResult,
  messageOnly,
  myOrganization,
  organization,
  paginated,
  patient,
  patientCreated,
  problemNote,
  processAudioResult,
  progressStats,
  refreshResult,
  registerResult,
  reportSummary,
  routeSuggestion,
  scheduledVisit,
  schedulingPolicy,
  sendOtpResult,
  settingsList,
  subscriptionState,
  suggestionsResult,
  visitAudioUploadResult,
  signInResult,
  therapistEarning,
  timeSavedReport,
  userProfile,
  verifyOtpResult,
  visit,
} from '@fieldchart/schema/api';
import { restMutationsResult } from '@fieldchart/schema/sync';
import type { HttpMethod } from './transport.ts';

/** What a success answers, and so what the client method returns. */
export type ResponseKind =
  /** `{status, data}`: the method returns `data`. */
  | 'data'
  /** `{status, data: [...], meta}`: the method returns `{data, meta}`. */
  | 'page'
  /** `{status, message}`: the method returns `{message}`. */
  | 'message'
  /** Bytes (a download): the method returns them with their content type and range. */
  | 'binary';

/** One row of {@link ENDPOINTS}. */
export interface EndpointSpec<M extends HttpMethod = HttpMethod, P extends string = string, K extends ResponseKind = ResponseKind, S extends z.ZodType = z.ZodType> {
  readonly method: M;
  /** Below the API prefix; `:name` marks a path parameter, as in the server's route. */
  readonly path: P;
  /** Sends the bearer token; false for sign-in, registration and emailed-link endpoints. */
  readonly auth: boolean;
  readonly kind: K;
  /** The whole success body, envelope included. */
  readonly response: S;
}

function data<M extends HttpMethod, P extends string, T extends z.ZodType>(method: M, path: P, item: T, auth = true) {
  return { method, path, auth, kind: 'data', response: envelope(item) } as const satisfies EndpointSpec;
}
function page<M extends HttpMethod, P extends string, T extends z.ZodType>(method: M, path: P, item: T) {
  return { method, path, auth: true, kind: 'page', response: paginated(item) } as const satisfies EndpointSpec;
}
function message<M extends HttpMethod, P extends string>(method: M, path: P, auth = true) {
  return { method, path, auth, kind: 'message', response: messageOnly } as const satisfies EndpointSpec;
}

function binary<M extends HttpMethod, P extends string>(method: M, path: P) {
  return { method, path, auth: true, kind: 'binary', response: z.instanceof(Uint8Array) } as const satisfies EndpointSpec;
}

const PUBLIC = false;

/** Every endpoint under the API prefix, keyed by the client method that calls it. */
export const ENDPOINTS = {
  // ---- authentication (server/src/routes/auth.ts) --------------------------------------
  signIn: data('POST', '/sign-in', signInResult, PUBLIC),
  signInSocial: data('POST', '/sign-in/social', signInResult, PUBLIC),
  register: data('POST', '/register', registerResult, PUBLIC),
  registerSocial: data('POST', '/register/social', registerResult, PUBLIC),
  'forgotPassword.sendOtp': data('POST', '/forgot-password/send-otp', sendOtpResult, PUBLIC),
  'forgotPassword.verifyOtp': data('POST', '/forgot-password/verify-otp', verifyOtpResult, PUBLIC),
  'forgotPassword.reset': message('POST', '/forgot-password/reset', PUBLIC),
  refresh: data('POST', '/token/refresh', refreshResult, PUBLIC),
  logout: message('POST', '/logout'),
  changePassword: message('POST', '/change-password'),
  deleteAccount: message('POST', '/delete-account'),

  // ---- profile and settings (account.ts; /my-settings/features is in organizations.ts) --
  myProfile: data('GET', '/my-profile', userProfile),
  updateBasicInfo: data('PUT', '/update-basic-info', userProfile),
  completeOnboarding: data('POST', '/complete-onboarding', userProfile),
  'verifyEmail.sendOtp': message('POST', '/verify-email/send-otp'),
  'verifyEmail.verify': data('POST', '/verify-email/verify', userProfile),
  'mySettings.get': data('GET', '/my-settings', clinicianSettings),
  'mySettings.update': data('PUT', '/my-settings', clinicianSettings),
  'mySettings.updateFeatures': data('PUT', '/my-settings/features', effectiveConfig),
  disciplines: data('GET', '/therapist-discipline', z.array(z.string())),
  settings: data('GET', '/master/setting-list', settingsList),

  // ---- organizations (organizations.ts, claims.ts) ---------------------------------------
  'organizations.search': data('GET', '/organizations', z.array(organization)),
  'organizations.request': message('POST', '/organizations/request'),
  'organizations.requestToJoin': message('POST', '/organizations/:uuid/join-request'),
  'organizations.myJoinRequests': data('GET', '/my-join-requests', z.array(joinRequest)),
  'organizations.invite': message('POST', '/organizations/invite'),
  'organizations.previewClaim': data('GET', '/organizations/claim/:token', claimPreview, PUBLIC),
  'organizations.claim': message('POST', '/organizations/claim'),

  // ---- the caller's organization (organizations.ts, invitations.ts) ----------------------
  'myOrganization.get': data('GET', '/my-organization', myOrganization),
  'myOrganization.update': data('PUT', '/my-organization', myOrganization),
  'myOrganization.leave': message('POST', '/my-organization/leave'),
  'myOrganization.config': data('GET', '/my-organization/config', effectiveConfig),
  'myOrganization.updateConfig': data('PUT', '/my-organization/config', effectiveConfig),
  'myOrganization.joinRequests.list': data('GET', '/my-organization/join-requests', z.array(joinRequest)),
  'myOrganization.joinRequests.approve': message('POST', '/my-organization/join-requests/:uuid/approve'),
  'myOrganization.joinRequests.reject': message('POST', '/my-organization/join-requests/:uuid/reject'),
  'myOrganization.invitations.list': data('GET', '/my-organization/invitations', z.array(invitation)),
  'myOrganization.invitations.send': message('POST', '/my-organization/invitations'),
  'myOrganization.invitations.revoke': message('DELETE', '/my-organization/invitations/:uuid'),

  // ---- invitations: the invitee's side (invitations.ts) ----------------------------------
  'invitations.mine': data('GET', '/my-invitations', z.array(invitation)),
  'invitations.accept': message('POST', '/my-invitations/:uuid/accept'),
  'invitations.decline': message('POST', '/my-invitations/:uuid/decline'),
  'invitationSignup.acceptInvitation': data('POST', '/accept-invitation', acceptInvitationResult, PUBLIC),
  'invitationSignup.verifyOtp': data('POST', '/invite-otp-verify', inviteOtpVerifyResult, PUBLIC),
  'invitationSignup.setNewPassword': data('POST', '/set-new-password', signInResult, PUBLIC),

  // ---- patients and documents (patients.ts) ----------------------------------------------
  'patients.list': page('GET', '/patient/my-patients', patient),
  'patients.create': data('POST', '/patient/create', patientCreated),
  'patients.update': message('PUT', '/patient/update/:uuid'),
  'patients.chart': data('GET', '/patient/chart-details/:referralUuid', chartDetail),
  'patients.scheduledVisits': data('POST', '/patient/get-scheduled-visits/:referralUuid', z.array(scheduledVisit)),
  'patients.generalSummary': data('GET', '/patient/general-summary', generalSummary),
  'documents.list': data('GET', '/document/list', z.array(documentRecord)),

  // ---- visits (visits.ts) ----------------------------------------------------------------
  'visits.schedule': data('POST', '/schedule-visit-request-save', z.object({ uuid: z.string() })),
  'visits.upcoming': data(
    'GET',
    '/get-upcomming-visits',
    z.object({ today: z.string(), today_visit: z.array(visit), upcomming_visit: z.array(visit) }),
  ),
  'visits.history': page('GET', '/get-visit-history', visit),
  'visits.details': data('GET', '/visit-details/:scheduleUuid', visit),
  'visits.recordTimerEvents': message('POST', '/visit-timer-events'),
  'visits.submitNote': message('POST', '/patient-referral-end-visit-note'),
  'visits.recordMileage': message('PUT', '/visit/:uuid/mileage'),
  'pushTokens.register': message('POST', '/register-fcm-token'),
  'sync.applyMutations': data('POST', '/sync/mutations', restMutationsResult),
  // ---- route optimisation (scheduling.ts) -------------------------------------------------
  'scheduling.policy': data('GET', '/scheduling/policy', schedulingPolicy),
  'scheduling.updatePolicy': data('PUT', '/scheduling/policy', schedulingPolicy),
  'scheduling.optimize': data('POST', '/scheduling/optimize', routeSuggestion),
  'scheduling.apply': data('POST', '/scheduling/apply', z.object({ changed: z.number().int() })),

  // ---- messages and notifications (messages.ts, notifications.ts) -------------------------
  'messages.conversations': data('GET', '/messages/conversations', z.array(conversation)),
  'messages.list': page('GET', '/messages/:conversationId', chatMessage),
  'messages.send': message('POST', '/messages/send'),
  'messages.markRead': message('PUT', '/messages/:conversationId/read'),
  'notifications.list': page('GET', '/notifications', notification),
  'notifications.markRead': message('PUT', '/notifications/:uuid/read'),
  'notifications.markAllRead': message('PUT', '/notifications/read-all'),

  // ---- AI documentation pipeline (ai.ts) -------------------------------------------------
  /** Send a FormData body: `audio` (file) or `upload_id`, `schedule_uuid`, `discipline`, `encounter_type`. */
  'ai.processAudio': data('POST', '/ai/process-audio', processAudioResult),
  'ai.status': data('GET', '/ai/status/:serverUuid', aiStatus),
  'ai.retry': message('POST', '/ai/retry/:serverUuid'),
  // checklists (ai-checklists.ts)
  'ai.checklist': data('GET', '/ai/checklist/:discipline', z.array(checklistItem)),
  'ai.matchChecklist': data('POST', '/ai/match-checklist', matchChecklistResult),
  'ai.suggestions': data('POST', '/ai/suggestions', suggestionsResult),

  // ---- audio (audio.ts) -------------------------------------------------------------------
  /** Send a FormData body: `audio` (file: m4a, wav or mp3) and `schedule_uuid`. */
  'audio.upload': data('POST', '/visit-audio-upload', visitAudioUploadResult),
  /** The recording (`data.url` of the upload), whole or a byte range. */
  'audio.download': binary('GET', '/audio/:uuid'),

  // ---- dashboards and reports (reports.ts) -----------------------------------------------
  'reports.actionList': data('GET', '/dashboard-action-list', dashboardActionList),
  'reports.progressStats': data('GET', '/progress-stats', progressStats),
  'reports.earnings': data('GET', '/therapist-earning', therapistEarning),
  'reports.problemNotes': data('GET', '/problem-notes', z.array(problemNote)),
  'reports.summary': data('GET', '/reports/summary', reportSummary),
  'reports.timeSaved': data('GET', '/reports/time-saved', timeSavedReport),

  // ---- subscription (subscription.ts; the stores' notification endpoints are not the app's) --
  'subscription.status': data('GET', '/subscription/status', subscriptionState),
  'subscription.verifyReceipt': message('POST', '/subscription/verify-receipt'),
} as const;

/** A client method name that is a key of {@link ENDPOINTS}, e.g. `'visits.upcoming'`. */
export type EndpointName = keyof typeof ENDPOINTS;
