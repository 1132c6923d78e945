/**
 * The REST client against a real server, endpoint by endpoint: a clinician's flows through
 * every client method (register → patient → visit → timer events → mileage → note → reports;
 * organizations from claim to leave), typed errors on the failure paths, and a check that the
 * client's endpoint table and the server's routes (its OpenAPI document) are the same set.
 *
 * Every request goes through a recording `fetch`; once all flows have passed, every entry of
 * ENDPOINTS must have answered a success at least once.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { after, before, test } from 'node:test';
import {
  API_PREFIX,
  createRestClient,
  ENDPOINTS,
  FieldchartApiError,
  newIdempotencyKey,
  type EndpointName,
  type FetchLike,
  type RestClient,
} from '@fieldchart/client';
import { forEachBackend } from '../helpers/backends.ts';
import { eventually } from '../helpers/eventually.ts';
import { startIdProvider, type IdProvider } from '../helpers/id-provider.ts';
import { startGoogleStandIn, type GoogleStandIn } from '../helpers/store-stand-ins.ts';
import { newAccount, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { mailedVerificationCode } from '../helpers/verify-email.ts';
import { speech } from '../server/audio/audio-fixtures.ts';
import { silentWav } from '../helpers/wav.ts';

const AUDIENCE = 'fieldchart-client-endpoints-test';
const CLAIM_LINK = /\/claim\/([A-Za-z0-9_-]{43})\b/;
const INVITE_LINK = /\/invite\/([A-Za-z0-9_-]{43})\b/;
const CODE = /\b(\d{6})\b/;
/** A 1×1 PNG, as a signature pad would send (only smaller). */
const TINY_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

/** Runs `fn`, which must throw a FieldchartApiError, and answers it. */
async function apiError(fn: () => Promise<unknown>): Promise<FieldchartApiError> {
  try {
    await fn();
  } catch (err) {
    assert.ok(err instanceof FieldchartApiError, `expected FieldchartApiError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected FieldchartApiError, nothing was thrown');
}

/** `METHOD /path/{param}` as the OpenAPI document writes it. */
const routeOf = (method: string, path: string) => `${method.toUpperCase()} ${path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`;

/** The endpoint a request went to, by method and path pattern. */
const patterns = (Object.entries(ENDPOINTS) as Array<[EndpointName, (typeof ENDPOINTS)[EndpointName]]>).map(([name, ep]) => ({
  name,
  method: ep.method,
  regex: new RegExp(`^${API_PREFIX}${ep.path.replace(/:[A-Za-z0-9_]+/g, '[^/]+')}$`),
}));
function endpointOf(method: string, pathname: string): EndpointName | undefined {
  const all = patterns.filter((p) => p.method === method && p.regex.test(pathname));
  // A static segment wins over a parameter, as in the server's router (/messages/conversations, not /messages/:conversationId).
  const statics = all.filter((p) => !ENDPOINTS[p.name].path.includes(':'));
  const hits = statics.length > 0 ? statics : all;
  assert.ok(hits.length <= 1, `${method} ${pathname} matches ${hits.map((h) => h.name).join(', ')}`);
  return hits[0]?.name;
}

/** The value at a dotted path (`'visits.upcoming'`) of the client. */
function memberAt(client: RestClient, name: string): unknown {
  return name.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], client);
}

forEachBackend('client-lib REST client: every endpoint', (backend) => {
  let server: TestServer;
  let google: IdProvider;
  let play: GoogleStandIn;
  const succeeded = new Set<EndpointName>();
  const declared: string[] = [];
  const passed = new Set<string>();

  before(async () => {
    google = await startIdProvider('google', AUDIENCE);
    play = await startGoogleStandIn();
    server = await startTestServer(backend, { env: { GOOGLE_CLIENT_IDS: AUDIENCE, GOOGLE_JWKS_URL: google.jwksUrl, ...play.env } });
  });
  after(async () => {
    await server.close();
    await google.close();
    await play.close();
  });
  // Only meaningful when every flow ran and passed (not under a name filter, not after a failure).
  after(() => {
    if (declared.some((t) => !passed.has(t))) return;
    const missed = Object.keys(ENDPOINTS).filter((name) => !succeeded.has(name as EndpointName));
    assert.deepEqual(missed, [], 'client methods never exercised on a success path');
  });

  /** A test that counts toward the coverage check above. */
  function flow(name: string, fn: () => Promise<void>) {
    declared.push(name);
    test(name, async () => {
      await fn();
      passed.add(name);
    });
  }

  const recordingFetch: FetchLike = async (url, init) => {
    const res = await globalThis.fetch(url, init);
    if (res.ok) {
      const name = endpointOf(init.method ?? 'GET', new URL(url).pathname);
      if (name) succeeded.add(name);
    }
    return res;
  };

  /** A client with its own token, as an app holds it. */
  function session() {
    let token: string | null = null;
    const api = createRestClient({ baseUrl: server.url, fetch: recordingFetch, getToken: () => token });
    return { api, setToken: (t: string | null) => void (token = t) };
  }

  /** A freshly registered clinician, signed in. */
  async function clinician(overrides: Parameters<typeof newAccount>[0] = {}) {
    const { api, setToken } = session();
    const account = newAccount(overrides);
    const registered = await api.register(account);
    setToken(registered.token);
    return { api, setToken, account, uuid: registered.user.uuid };
  }

  /** Proves the address through the client: code requested, read from the real mail, entered. */
  async function verifyEmail(api: RestClient, email: string) {
    const mark = server.mail.messages.length;
    assert.equal(typeof (await api.verifyEmail.sendOtp()).message, 'string');
    const otp = await mailedVerificationCode(server, email, mark);
    const profile = await api.verifyEmail.verify({ otp });
    assert.equal(profile.email_verified, true);
  }

  /** The first capture of `pattern` in the newest mail to `to` whose subject matches. */
  async function fromMail(to: string, subject: RegExp, pattern: RegExp): Promise<string> {
    const mail = await server.mail.waitFor(to, (m) => subject.test(m.subject));
    const found = pattern.exec(mail.text)?.[1];
    assert.ok(found, `no ${pattern} in "${mail.subject}"`);
    return found;
  }

  let nameCounter = 0;
  const uniqueName = (prefix: string) => `${prefix} ${++nameCounter} ${process.pid} ${randomUUID().slice(0, 8)}`;

  flow('account: sign-in, tokens, profile, email verification, own settings, push token, password, logout, delete', async () => {
    const { api, setToken, account } = await clinician();
    const signedIn = await api.signIn({ email: account.email, password: account.password });
    setToken(signedIn.token);
    const pair = await api.refresh({ refresh_token: signedIn.refresh_token });
    setToken(pair.token);

    assert.equal((await api.myProfile()).email, account.email);
    assert.equal((await api.updateBasicInfo({ address: '1 Main St' })).address, '1 Main St');
    assert.equal((await api.completeOnboarding({ discipline: 'PT' })).needs_onboarding, false);
    assert.ok((await api.disciplines()).includes('PT'));
    assert.equal((await api.settings()).api_version, 'v1');
    await verifyEmail(api, account.email);

    const settings = await api.mySettings.update({ time_zone: 'America/Chicago', mileage_rate: 0.7, pay_rates: { routine: 80 } });
    assert.equal(settings.time_zone, 'America/Chicago');
    assert.deepEqual(await api.mySettings.get(), settings);
    const features = await api.mySettings.updateFeatures({ features: { ai_voice: false, copy_last_visit: true } });
    assert.equal(features.source, 'solo');
    assert.equal(features.features.ai_voice, false);
    assert.equal(features.features.copy_last_visit, true);

    assert.match((await api.pushTokens.register({ fcm_token: `fcm:${'A1b2-C3d4_'.repeat(15)}` })).message, /registered/i);

    // Messages: a new conversation, a reply in it, its page of messages, marked read.
    await api.messages.send({ patient_email: 'pat@example.test', patient_name: 'Pat Doe', body: 'See you Tuesday.', subject: 'Visit' });
    const [conversation] = await api.messages.conversations();
    assert.ok(conversation, 'the conversation is listed');
    await api.messages.send({ patient_email: 'pat@example.test', patient_name: 'Pat Doe', body: 'At 10.', conversation_id: conversation.id });
    const page = await api.messages.list(conversation.id, { per_page: 1 });
    assert.deepEqual([page.data.map((m) => m.body), page.meta.total], [['At 10.'], 2]);
    assert.match((await api.messages.markRead(conversation.id)).message, /read/);

    const changed = await api.changePassword({ current_password: account.password, new_password: 'N3w-password!', new_password_confirmation: 'N3w-password!' });
    assert.equal(typeof changed.message, 'string');
    assert.equal(typeof (await api.logout()).message, 'string');
    assert.equal((await apiError(() => api.myProfile())).code, 'invalid_token');

    setToken((await api.signIn({ email: account.email, password: 'N3w-password!' })).token);
    assert.equal(typeof (await api.deleteAccount({ password: 'N3w-password!' })).message, 'string');
    assert.equal((await apiError(() => api.signIn({ email: account.email, password: 'N3w-password!' }))).code, 'invalid_credentials');
  });

  flow('password reset and social sign-in', async () => {
    const { api, account } = await clinician();
    const { token } = await api.forgotPassword.sendOtp({ email: account.email });
    const otp = await fromMail(account.email, /reset code/i, CODE);
    const { reset_token } = await api.forgotPassword.verifyOtp({ token, otp });
    await api.forgotPassword.reset({ token: reset_token, password: 'Res3t-password', password_confirmation: 'Res3t-password' });
    assert.equal((await api.signIn({ email: account.email, password: 'Res3t-password' })).loginData.email, account.email);

    const email = newAccount().email;
    const body = { provider: 'google' as const, email, first_name: 'Sam', last_name: 'Social' };
    const registered = await api.registerSocial({ ...body, id_token: await google.sign({ sub: `g-${email}`, email, email_verified: true }) });
    const signedIn = await api.signInSocial({ ...body, id_token: await google.sign({ sub: `g-${email}` }) });
    assert.equal(signedIn.loginData.uuid, registered.user.uuid);
  });

  flow("a clinician's day: patient → visit → timer events → mileage → signed note → lists, charts and reports", async () => {
    const { api } = await clinician();
    await api.mySettings.update({ time_zone: 'UTC', pay_rates: { routine: 85 }, mileage_rate: 0.5 });

    const patient = await api.patients.create(
      {
        first_name: 'Marguerite',
        last_name: 'Okafor',
        address: '1200 W Fullerton Ave, Chicago, IL 60614',
        referral: { discipline: 'PT', diagnosis_codes: ['m17.11'], ordered_frequency: '2W4' },
      },
      { idempotencyKey: newIdempotencyKey() },
    );
    assert.match((await api.patients.update(patient.uuid, { phone: '555-0142' })).message, /updated/i);
    const listed = await api.patients.list({ search_by_name: 'marg', per_page: 5 });
    assert.deepEqual(listed.data.map((p) => [p.uuid, p.referral_uuid, p.phone]), [[patient.uuid, patient.referral_uuid, '555-0142']]);
    assert.deepEqual(listed.meta, { current_page: 1, per_page: 5, total: 1, last_page: 1 });

    const { today, today_visit } = await api.visits.upcoming();
    assert.deepEqual(today_visit, []);
    const { uuid: visitId } = await api.visits.schedule({ patient_uuid: patient.uuid, visit_date: today, start_time: '08:00', visit_type: 'routine' });
    const upcoming = await api.visits.upcoming({ filter: 'week', per_page: 10, filter_date: today });
    assert.deepEqual(upcoming.today_visit.map((v) => v.schedule_uuid), [visitId]);

    const start = Date.now() - 3 * 3600_000;
    const at = (minutes: number) => new Date(start + minutes * 60_000).toISOString();
    const gps = { latitude: 41.925, longitude: -87.652, accuracy: 8 };
    const recorded = await api.visits.recordTimerEvents({
      schedule_uuid: visitId,
      events: [
        { event_type: 'start_travel', event_time: at(0), ...gps },
        { event_type: 'arrive', event_time: at(20), ...gps },
        { event_type: 'start_documentation', event_time: at(70), ...gps },
        { event_type: 'complete', event_time: at(85), ...gps },
      ],
    });
    assert.match(recorded.message, /4 event\(s\) recorded/);
    assert.match((await api.visits.recordMileage(visitId, { total_miles: 14.2, travel_miles: 12, onsite_miles: 2.2 })).message, /Mileage saved/);
    // The sync channel's HTTP fallback: an older mileage entry is acknowledged, not applied.
    const applied = await api.sync.applyMutations({
      client_id: randomUUID(),
      mutations: [{ mutation_id: 1, name: 'visit.mileage', args: { uuid: visitId, mileage: { total_miles: 3, recorded_at: at(-60) } }, client_time: at(0) }],
    });
    assert.deepEqual(applied, { last_mutation_id: 1, results: [{ type: 'ack', mutation_id: 1, result: { applied: false } }] });
    const noted = await api.visits.submitNote({
      schedule_uuid: visitId,
      subjective: 'Less knee pain on stairs.',
      objective: 'Gait steady with cane.',
      assessment: 'Progressing toward goals.',
      plan: 'Continue HEP.',
      vital_signs: { heart_rate: 72, systolic_bp: 118, diastolic_bp: 76 },
      signature: `data:image/png;base64,${TINY_PNG}`,
    });
    assert.match(noted.message, /signed/);

    const visit = await api.visits.details(visitId);
    assert.equal(visit.status, 'completed');
    assert.equal(visit.evv.drive_minutes, 20);
    assert.deepEqual(visit.timer_events.map((e) => e.event_type), ['start_travel', 'arrive', 'start_documentation', 'complete']);
    assert.deepEqual([visit.mileage?.total_miles, visit.mileage?.travel_miles], [14.2, 12]);
    assert.equal(visit.soap_note?.signed, true);
    assert.equal(visit.soap_note?.signature_mime, 'image/png');

    const history = await api.visits.history({ record_type: 'with_notes' });
    assert.deepEqual(history.data.map((v) => v.schedule_uuid), [visitId]);
    assert.equal(history.meta.total, 1);

    const chart = await api.patients.chart(patient.referral_uuid);
    assert.equal(chart.patient.uuid, patient.uuid);
    assert.deepEqual(chart.referral.diagnosis_codes, ['M17.11']);
    assert.equal(chart.referral.visits_ordered, 8);
    const [year, month] = today.split('-');
    assert.deepEqual((await api.patients.scheduledVisits(patient.referral_uuid)).map((v) => v.schedule_uuid), [visitId]);
    const inMonth = await api.patients.scheduledVisits(patient.referral_uuid, { filter_month: month, filter_year: year });
    assert.deepEqual(inMonth.map((v) => [v.schedule_uuid, v.has_note]), [[visitId, true]]);
    const summary = await api.patients.generalSummary({ dateRange: 'today' });
    assert.deepEqual([summary.date_range, summary.visits.completed, summary.notes.signed], ['today', 1, 1]);
    assert.deepEqual((await api.documents.list()).map((d) => [d.schedule_uuid, d.signed]), [[visitId, true]]);

    const actions = await api.reports.actionList();
    assert.equal(actions.today, today);
    assert.equal(actions.stats.today, 1);
    assert.equal((await api.reports.progressStats()).weeks.length, 8);
    const earnings = await api.reports.earnings();
    assert.equal(earnings.currency, 'USD');
    assert.deepEqual([earnings.year_to_date.completed_visits, earnings.year_to_date.visit_pay], [1, 85]);
    assert.ok(Array.isArray(await api.reports.problemNotes()));
    const report = await api.reports.summary({ from: today, to: today });
    assert.deepEqual([report.totals.visits, report.totals.total_miles, report.totals.travel_miles, report.totals.onsite_miles], [1, 14.2, 12, 2.2]);
    assert.deepEqual(report.visits.map((v) => v.schedule_uuid), [visitId]);
    const saved = await api.reports.timeSaved({ scope: 'me' });
    assert.equal(saved.sufficient_data, false);
    assert.equal(typeof saved.note, 'string');
  });

  flow('route planning: policy, optimize, apply', async () => {
    const { api } = await clinician();
    await api.mySettings.update({ time_zone: 'UTC' });
    assert.equal((await api.scheduling.policy()).day_start, '08:00');
    const policy = await api.scheduling.updatePolicy({ home_base_lat: 40.0992, home_base_lng: -83.0171, buffer_minutes: 5 });
    assert.deepEqual([policy.home_base_lat, policy.buffer_minutes], [40.0992, 5]);
    const date = '2026-12-14';
    for (const [i, address] of ['1 Capitol Square, Columbus, OH 43215', '800 E 17th Ave, Columbus, OH 43211', '1069 Jaeger St, Columbus, OH 43206'].entries()) {
      await api.visits.schedule({ visit_date: date, start_time: `1${i}:00`, address });
    }
    const plan = await api.scheduling.optimize({ date });
    assert.equal(plan.visits.length, 3);
    assert.equal(plan.routing_source, 'great_circle');
    const applied = await api.scheduling.apply({ date, visits: plan.visits.map((v) => ({ schedule_uuid: v.schedule_uuid, start_time: v.suggested_start_time })) });
    assert.equal(applied.changed, 3);
  });

  flow('organizations: invite and claim one, run it as admin, join requests, invitations (in-app and by link), leave', async () => {
    const publicApi = session().api;
    const inviter = await clinician();
    const admin = await clinician();
    const name = uniqueName('Lakeside Therapy');

    await inviter.api.organizations.invite({ organization_name: name, contact_email: admin.account.email, organization_type: 'clinic', contact_name: 'Dana' });
    const claimToken = await fromMail(admin.account.email, /invited/, CLAIM_LINK);
    assert.deepEqual(await publicApi.organizations.previewClaim(claimToken), { organization_name: name, inviter_first_name: inviter.account.first_name, expired: false });
    assert.match((await admin.api.organizations.claim({ token: claimToken })).message, /admin/);

    const org = await admin.api.myOrganization.get();
    assert.deepEqual([org.name, org.role, org.member_count], [name, 'admin', 2]);
    assert.equal((await admin.api.myOrganization.update({ phone: '555-0110' })).phone, '555-0110');
    assert.equal((await admin.api.myOrganization.config()).source, 'organization');
    const config = await admin.api.myOrganization.updateConfig({ features: { billing_codes: true }, terminology: { patient: 'Client' } });
    assert.deepEqual([config.features.billing_codes, config.terminology.patient], [true, 'Client']);

    // Join requests: one approved (then that member leaves), one rejected.
    const joiner = await clinician();
    const [found] = await joiner.api.organizations.search({ search: name });
    assert.equal(found?.uuid, org.uuid);
    await joiner.api.organizations.requestToJoin(org.uuid);
    assert.deepEqual((await joiner.api.organizations.myJoinRequests()).map((r) => [r.organization_uuid, r.status]), [[org.uuid, 'pending']]);
    const refused = await clinician();
    await refused.api.organizations.requestToJoin(org.uuid);
    const pending = await admin.api.myOrganization.joinRequests.list();
    const requestOf = (uuid: string) => pending.find((r) => r.user.uuid === uuid)?.uuid ?? assert.fail(`no join request of ${uuid}`);
    await admin.api.myOrganization.joinRequests.approve(requestOf(joiner.uuid));
    await admin.api.myOrganization.joinRequests.reject(requestOf(refused.uuid));
    assert.equal((await joiner.api.myOrganization.get()).role, 'member');
    assert.deepEqual(await refused.api.organizations.myJoinRequests(), []);
    // The approval is in the joiner's notification history.
    const unread = await joiner.api.notifications.list({ is_read: 0 });
    assert.deepEqual(unread.data.map((n) => n.type), ['join_request_approved']);
    assert.match((await joiner.api.notifications.markRead(unread.data[0]?.uuid ?? '')).message, /read/);
    assert.equal((await joiner.api.notifications.list({ is_read: 0 })).meta.total, 0);
    assert.match((await joiner.api.notifications.markAllRead()).message, /0 notifications/);
    assert.match((await joiner.api.myOrganization.leave()).message, /You left/);

    // In-app invitations: accepted by one verified clinician, declined by another.
    const invitee = await clinician();
    const decliner = await clinician();
    await verifyEmail(invitee.api, invitee.account.email);
    await verifyEmail(decliner.api, decliner.account.email);
    await admin.api.myOrganization.invitations.send({ email: invitee.account.email });
    await admin.api.myOrganization.invitations.send({ email: decliner.account.email, role: 'member' });
    const [toInvitee] = await invitee.api.invitations.mine();
    assert.equal(toInvitee?.organization_uuid, org.uuid);
    assert.match((await invitee.api.invitations.accept(toInvitee.uuid)).message, /joined/);
    const [toDecliner] = await decliner.api.invitations.mine();
    assert.ok(toDecliner);
    await decliner.api.invitations.decline(toDecliner.uuid);

    // By link: a new account from the emailed invitation; and one invitation revoked.
    const newcomer = newAccount().email;
    await admin.api.myOrganization.invitations.send({ email: newcomer, first_name: 'Nora', last_name: 'Okafor' });
    const inviteToken = await fromMail(newcomer, /^Join /, INVITE_LINK);
    assert.deepEqual(await publicApi.invitationSignup.acceptInvitation({ token: inviteToken }), { email: newcomer, organization_name: name });
    const otp = await fromMail(newcomer, /verification code/i, CODE);
    const { id } = await publicApi.invitationSignup.verifyOtp({ token: inviteToken, otp });
    const created = await publicApi.invitationSignup.setNewPassword({ token: inviteToken, id, password: 'long enough 1', password_confirmation: 'long enough 1' });
    assert.deepEqual([created.loginData.email, created.loginData.first_name, created.loginData.subscription_status], [newcomer, 'Nora', 'org_managed']);
    assert.equal((await publicApi.myOrganization.get({ token: created.token })).uuid, org.uuid);

    const revokedEmail = newAccount().email;
    await admin.api.myOrganization.invitations.send({ email: revokedEmail });
    const sent = await admin.api.myOrganization.invitations.list();
    const toRevoke = sent.find((i) => i.email === revokedEmail) ?? assert.fail('invitation not listed');
    await admin.api.myOrganization.invitations.revoke(toRevoke.uuid);
    const statuses = Object.fromEntries((await admin.api.myOrganization.invitations.list()).map((i) => [i.email, i.status]));
    assert.deepEqual(
      [statuses[invitee.account.email], statuses[decliner.account.email], statuses[newcomer], statuses[revokedEmail]],
      ['accepted', 'declined', 'accepted', 'revoked'],
    );

    assert.match((await inviter.api.organizations.request({ name: uniqueName('Harbor Rehab'), type: 'private_practice' })).message, /approved/);
  });

  flow('subscription: status, a Google Play purchase verified once', async () => {
    const { api } = await clinician();
    assert.equal((await api.subscription.status()).subscription_status, 'trial');
    const purchase_token = `gp-${randomUUID()}`;
    play.setSubscription(purchase_token, { productId: 'service_monthly', expiryTime: new Date(Date.now() + 30 * 86_400_000) });
    const body = { product_id: 'service_monthly', platform: 'google', purchase_token } as const;
    assert.equal(typeof (await api.subscription.verifyReceipt(body)).message, 'string');
    const state = await api.subscription.status();
    assert.equal(state.subscription_status, 'active');
    assert.equal(state.platform, 'google');
    const again = await apiError(() => api.subscription.verifyReceipt(body));
    assert.equal(again.status, 409);
    assert.equal(again.code, 'receipt_already_processed');
  });

  flow('failures are FieldchartApiError with status and code (404, 403, 409, 422)', async () => {
    const { api } = await clinician();
    const unknownVisit = await apiError(() => api.visits.details(randomUUID()));
    assert.deepEqual([unknownVisit.status, unknownVisit.code], [404, 'visit_not_found']);
    const unknownReferral = await apiError(() => api.patients.chart('not-a-uuid'));
    assert.deepEqual([unknownReferral.status, unknownReferral.code], [404, 'referral_not_found']);
    // Path parameters are encoded: a slash stays inside the segment (a 404 for that id, not another route).
    assert.equal((await apiError(() => api.visits.recordMileage('a/b', { total_miles: 1 }))).code, 'visit_not_found');
    const unknownOrg = await apiError(() => api.organizations.requestToJoin(randomUUID()));
    assert.equal(unknownOrg.status, 404);

    const invalid = await apiError(() => api.visits.schedule({ visit_date: '2026-02-30', start_time: '25:00' }));
    assert.deepEqual([invalid.status, invalid.code], [422, 'validation_failed']);
    assert.deepEqual(Object.keys(invalid.fieldErrors).sort(), ['start_time', 'visit_date']);
    const badQuery = await apiError(() => api.visits.history({ per_page: 0 }));
    assert.deepEqual([badQuery.status, Object.keys(badQuery.fieldErrors)], [422, ['per_page']]);

    const notAdmin = await apiError(() => api.myOrganization.invitations.list());
    assert.equal(notAdmin.status, 403);

    const patient = await api.patients.create({ first_name: 'Ada', last_name: 'Byrne' });
    const { uuid } = await api.visits.schedule({ patient_uuid: patient.uuid, visit_date: '2026-03-02', start_time: '09:00' });
    const note = { schedule_uuid: uuid, subjective: 'S', objective: 'O', assessment: 'A', plan: 'P' };
    await api.visits.submitNote(note);
    const twice = await apiError(() => api.visits.submitNote(note));
    assert.equal(twice.status, 409);

    // Nothing is sent for a path parameter that would name another route.
    await assert.rejects(() => api.visits.details('..'), TypeError);
    await assert.rejects(() => api.patients.update('', {}), TypeError);
  });

  flow('AI checklists: a discipline’s items, a transcript matched, suggestions; typed errors', async () => {
    const { api } = await clinician();
    const items = await api.ai.checklist('pta');
    assert.ok(items.some((i) => i.id === 'homebound_status'));
    const transcript = 'Patient reports pain 3/10. BP 128/76. Gait training 20 minutes. Plan to continue 2x week.';
    const match = await api.ai.matchChecklist({ transcript, discipline: 'PT' });
    assert.equal(match.matched_items.vital_signs?.matched, true);
    assert.equal(match.matched_items.homebound_status?.evidence, null);
    const { suggestions } = await api.ai.suggestions({ transcript, discipline: 'PT', checked_items: ['homebound_status'] });
    assert.ok(suggestions.length > 0);
    assert.ok(!suggestions.includes(items.find((i) => i.id === 'homebound_status')!.prompt));
    assert.equal((await apiError(() => api.ai.checklist('XYZ'))).status, 404);
    const bad = await apiError(() => api.ai.matchChecklist({ transcript, discipline: 'XYZ' }));
    assert.equal(bad.status, 422);
    assert.ok(bad.fieldErrors.discipline);
  });

  flow('AI pipeline: a dictation processed, its status, a failed run retried; typed errors', async () => {
    const { api } = await clinician();
    const { uuid: visit } = await api.visits.schedule({ visit_date: '2026-03-02', start_time: '11:00', address: '5 Elm St' });
    // One second of silence: whatever engine this server has, the run fails (no speech, or no engine).
    const wav = silentWav(32_000);
    const form = new FormData();
    form.append('schedule_uuid', visit);
    form.append('discipline', 'PT');
    form.append('encounter_type', 'daily_note');
    form.append('audio', new Blob([new Uint8Array(wav)], { type: 'audio/wav' }), 'silence.wav');
    const { transcription_uuid: id } = await api.ai.processAudio(form);
    const failed = await eventually(
      async () => {
        const s = await api.ai.status(id);
        assert.equal(s.status, 'failed');
        return s;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    assert.ok(failed.error_message && failed.error_message.length > 20);
    const { message } = await api.ai.retry(id);
    assert.equal(typeof message, 'string');
    assert.equal((await apiError(() => api.ai.status(randomUUID()))).status, 404);
    const bad = new FormData();
    bad.append('schedule_uuid', visit);
    bad.append('discipline', 'PT');
    const invalid = await apiError(() => api.ai.processAudio(bad));
    assert.equal(invalid.status, 422);
    assert.ok(invalid.fieldErrors.encounter_type);
  });

  flow('audio: a recording uploaded as FormData, downloaded whole and by range; typed errors', async () => {
    const { api } = await clinician();
    const { uuid: visit } = await api.visits.schedule({ visit_date: '2026-03-02', start_time: '10:00', address: '5 Elm St' });
    const wav = fs.readFileSync(speech('wav'));
    const form = new FormData();
    form.append('audio', new Blob([new Uint8Array(wav)], { type: 'audio/wav' }), 'visit.wav');
    form.append('schedule_uuid', visit);
    const stored = await api.audio.upload(form);
    assert.deepEqual([stored.format, stored.bytes], ['wav', wav.length]);
    assert.ok(stored.url.endsWith(`/audio/${stored.uuid}`));
    const whole = await api.audio.download(stored.uuid);
    assert.deepEqual([whole.status, whole.contentType], [200, 'audio/wav']);
    assert.ok(Buffer.from(whole.bytes).equals(wav));
    const range = await api.audio.download(stored.uuid, { range: { start: 4, end: 11 } });
    assert.deepEqual([range.status, range.contentRange, Buffer.from(range.bytes).toString('latin1')], [206, `bytes 4-11/${wav.length}`, wav.subarray(4, 12).toString('latin1')]);
    const other = await clinician();
    assert.equal((await apiError(() => other.api.audio.download(stored.uuid))).status, 404);
    assert.equal((await apiError(() => api.audio.download(stored.uuid, { range: { start: wav.length } }))).code, 'range_not_satisfiable');
    const noVisit = new FormData();
    noVisit.append('audio', new Blob([new Uint8Array(wav)]), 'visit.wav');
    const bad = await apiError(() => api.audio.upload(noVisit));
    assert.deepEqual([bad.status, Object.keys(bad.fieldErrors)], [422, ['schedule_uuid']]);
  });

  test("the client's endpoint table is exactly the server's routes", async () => {
    const res = await globalThis.fetch(`${server.url}${API_PREFIX}/openapi.json`);
    assert.equal(res.status, 200);
    const doc = (await res.json()) as { paths: Record<string, Record<string, { operationId?: string; security?: unknown[] }>> };
    const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item)
        .filter(([method]) => ['get', 'put', 'post', 'delete', 'patch'].includes(method))
        .map(([method, op]) => ({ route: routeOf(method, path), path, op })),
    );
    // Outside the API prefix there are only the health probes, for load balancers, not apps.
    assert.deepEqual(operations.filter((o) => !o.path.startsWith(`${API_PREFIX}/`)).map((o) => o.route).sort(), ['GET /healthz', 'GET /readyz']);

    const served = new Map(operations.filter((o) => o.path.startsWith(`${API_PREFIX}/`)).map((o) => [o.route.replace(` ${API_PREFIX}/`, ' /'), o.op]));
    const client = new Map(Object.entries(ENDPOINTS).map(([name, ep]) => [routeOf(ep.method, ep.path), { name, ep }]));
    assert.equal(client.size, Object.keys(ENDPOINTS).length, 'two client methods call the same route');

    const uncovered = [...served].filter(([route]) => !client.has(route)).map(([route, op]) => `${route} (${op.operationId})`);
    assert.deepEqual(uncovered, [], 'server routes without a client method: add them to client-lib/src/rest/endpoints.ts and an area');
    const stale = [...client.keys()].filter((route) => !served.has(route));
    assert.deepEqual(stale, [], 'client endpoints the server does not serve');

    const api = session().api;
    for (const [route, { name, ep }] of client) {
      assert.equal(typeof memberAt(api, name), 'function', `ENDPOINTS.${name} has no client method`);
      const isPublic = !(served.get(route)?.security?.length ?? 0);
      assert.equal(ep.auth, !isPublic, `${route}: the client's auth flag disagrees with the server`);
    }
  });
});

// Request building, without a server: query strings, path parameters, DELETE, idempotency keys.
test('queries, path parameters and methods are sent as the endpoint table says', async () => {
  const requests: Array<{ method: string; url: string; headers: Record<string, string>; body: string | undefined }> = [];
  const api = createRestClient({
    baseUrl: 'https://fieldchart.invalid',
    getToken: () => 'tok',
    fetch: async (url, init) => {
      requests.push({ method: init.method ?? 'GET', url, headers: init.headers as Record<string, string>, body: init.body as string | undefined });
      return Response.json({ status: true, message: 'ok' });
    },
  });
  await api.myOrganization.invitations.revoke('inv 1', { token: 'per-call' });
  await api.patients.update('p/1', { phone: '1' }, { idempotencyKey: 'k-1' });
  await api.pushTokens.register({ fcm_token: 'x' });
  await assert.rejects(() => api.visits.upcoming({ per_page: 5, filter: 'week', filter_date: undefined }), (err: Error) => err.name === 'UnexpectedResponseError');

  assert.deepEqual(
    requests.map((r) => `${r.method} ${r.url}`),
    [
      'DELETE https://fieldchart.invalid/api/therapist/v1/my-organization/invitations/inv%201',
      'PUT https://fieldchart.invalid/api/therapist/v1/patient/update/p%2F1',
      'POST https://fieldchart.invalid/api/therapist/v1/register-fcm-token',
      'GET https://fieldchart.invalid/api/therapist/v1/get-upcomming-visits?per_page=5&filter=week',
    ],
  );
  assert.equal(requests[0]?.headers.authorization, 'Bearer per-call');
  assert.equal(requests[0]?.body, undefined);
  assert.equal(requests[1]?.headers['idempotency-key'], 'k-1');
  assert.equal(requests[1]?.body, JSON.stringify({ phone: '1' }));
  assert.equal(requests[2]?.headers.authorization, 'Bearer tok');
});
