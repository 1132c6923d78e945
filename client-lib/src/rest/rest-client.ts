/**
 * The typed REST client: one method per endpoint of the clinician API (the table in
 * endpoints.ts), request types inferred from the same zod schemas the server validates with,
 * every success body checked against the server's response schema.
 */
import { createInvoker } from './invoke.ts';
import type { FieldchartApiError, NetworkError, UnexpectedResponseError } from './errors.ts';
import { createTransport, type FetchLike, type TokenSource, type UnauthorizedHandler } from './transport.ts';
import { accountsApi, type AccountsApi } from './areas/accounts.ts';
import { audioApi, type AudioApi } from './areas/audio.ts';
import { aiChecklistsApi, type AiChecklistsApi } from './areas/ai-checklists.ts';
import { aiPipelineApi, type AiPipelineApi } from './areas/ai-pipeline.ts';
import {
  invitationsApi,
  invitationSignupApi,
  myOrganizationApi,
  organizationsApi,
  type InvitationsApi,
  type InvitationSignupApi,
  type MyOrganizationApi,
  type OrganizationsApi,
} from './areas/organizations.ts';
import { documentsApi, patientsApi, type DocumentsApi, type PatientsApi } from './areas/patients.ts';
import { messagesApi, notificationsApi, type MessagesApi, type NotificationsApi } from './areas/messages.ts';
import { reportsApi, type ReportsApi } from './areas/reports.ts';
import { schedulingApi, type SchedulingApi } from './areas/scheduling.ts';
import { subscriptionApi, type SubscriptionApi } from './areas/subscription.ts';
import { syncApi, type SyncApi } from './areas/sync.ts';
import { pushTokensApi, visitsApi, type PushTokensApi, type VisitsApi } from './areas/visits.ts';

/** The path every endpoint lives under. */
export const API_PREFIX = '/api/therapist/v1';

/** Options of {@link createRestClient}. */
export interface RestClientOptions {
  /** The server's origin (and path, behind a proxy that adds one), e.g. `https://api.example.com`. */
  readonly baseUrl: string;
  /** Defaults to the global `fetch`. */
  readonly fetch?: FetchLike;
  /** Supplies the access token for endpoints that need a session. */
  readonly getToken?: TokenSource;
  /**
   * Called when the session behind a request is gone (401 with `missing_token`,
   * `invalid_token`, `account_disabled`); return `true` once a new token is available to
   * retry the request once. Not called for wrong passwords or codes, which are 401s too.
   */
  readonly onUnauthorized?: UnauthorizedHandler;
  /** Gives up on a request after this long, with a {@link NetworkError}; 0 disables. Default 30 000. */
  readonly timeoutMs?: number;
  /** Defaults to {@link API_PREFIX}. */
  readonly apiPrefix?: string;
}

/**
 * The clinician API, one method per endpoint. Account methods sit at the top level
 * (`signIn`, `myProfile`, …); the other areas are groups (`patients.create`,
 * `visits.upcoming`, `myOrganization.invitations.send`, `reports.summary`, …). Methods
 * answer the envelope's `data`; paginated lists answer `{data, meta}`; endpoints without
 * data answer `{message}`. {@link ENDPOINTS} maps each method to its HTTP method and path.
 */
export interface RestClient extends AccountsApi {
  /** Finding, joining, inviting and claiming organizations. */
  readonly organizations: OrganizationsApi;
  /** The caller's organization: profile, configuration, and (admin) join requests and invitations. */
  readonly myOrganization: MyOrganizationApi;
  /** Invitations addressed to the caller. */
  readonly invitations: InvitationsApi;
  /** A new account from an emailed invitation link (no session). */
  readonly invitationSignup: InvitationSignupApi;
  /** Patients, charts, referral visits and the general summary. */
  readonly patients: PatientsApi;
  /** Signed visit notes. */
  readonly documents: DocumentsApi;
  /** Scheduling, lists, timer events, SOAP notes and mileage. */
  readonly visits: VisitsApi;
  /** Push-notification device tokens. */
  readonly pushTokens: PushTokensApi;
  /** Email-based conversations with patients. */
  readonly messages: MessagesApi;
  /** The notification history. */
  readonly notifications: NotificationsApi;
  /** Dashboards and reports. */
  readonly reports: ReportsApi;
  /** The sync channel's HTTP fallback for queued mutations. */
  readonly sync: SyncApi;
  /** Scheduling policy, route suggestions and rescheduling a day. */
  readonly scheduling: SchedulingApi;
  /** Subscription status and store receipts. */
  readonly subscription: SubscriptionApi;
  /** Visit recordings: multipart upload, authorized download (whole or by range). */
  readonly audio: AudioApi;
  /** AI documentation: the pipeline (process-audio, status, retry) and checklists. */
  readonly ai: AiChecklistsApi & AiPipelineApi;
}

/**
 * Creates a client for the clinician API at `baseUrl`.
 *
 * @example
 * ```ts
 * let token: string | null = null;
 * const api = createRestClient({ baseUrl: 'https://fieldchart.example', getToken: () => token });
 * token = (await api.signIn({ email, password })).token;
 * const { uuid, referral_uuid } = await api.patients.create({ first_name: 'Ada', last_name: 'Byrne' });
 * const visit = await api.visits.schedule({ patient_uuid: uuid, visit_date: '2026-03-02', start_time: '09:00' });
 * ```
 *
 * Every method throws {@link FieldchartApiError} for an error status (`status`, `code`,
 * `fieldErrors`), {@link NetworkError} when the server could not be reached, and
 * {@link UnexpectedResponseError} when a success body does not match the schema. A path
 * parameter that is empty, `.` or `..` is a `TypeError`, before anything is sent.
 */
export function createRestClient(options: RestClientOptions): RestClient {
  const transport = createTransport({
    baseUrl: options.baseUrl,
    apiPrefix: options.apiPrefix ?? API_PREFIX,
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    getToken: options.getToken,
    onUnauthorized: options.onUnauthorized,
    timeoutMs: options.timeoutMs ?? 30_000,
  });
  const call = createInvoker(transport);
  return {
    ...accountsApi(call),
    organizations: organizationsApi(call),
    myOrganization: myOrganizationApi(call),
    invitations: invitationsApi(call),
    invitationSignup: invitationSignupApi(call),
    patients: patientsApi(call),
    documents: documentsApi(call),
    visits: visitsApi(call),
    pushTokens: pushTokensApi(call),
    messages: messagesApi(call),
    notifications: notificationsApi(call),
    reports: reportsApi(call),
    sync: syncApi(call),
    scheduling: schedulingApi(call),
    subscription: subscriptionApi(call),
    audio: audioApi(call),
    ai: { ...aiChecklistsApi(call), ...aiPipelineApi(call) },
  };
}
