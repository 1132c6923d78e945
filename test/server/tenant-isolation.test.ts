/**
 * Tenant isolation across the whole API: for every route that takes an id — in its path or
 * in its body — another clinician (an admin of another organization, so admin-only routes get
 * past their seat check) using this clinician's id gets exactly the answer a random id gets:
 * same status, same body. The walk is checked against the OpenAPI document, so a new route
 * with a path id fails here until it is classified.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../helpers/backends.ts';
import { API, registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';
import { verifyEmail } from '../helpers/verify-email.ts';
import fs from 'node:fs';
import { processAudio } from './ai/pipeline/pipeline-fixtures.ts';
import { fileOf, speech, upload } from './audio/audio-fixtures.ts';
import { orgWithAdmin } from './organizations/org-fixtures.ts';
import { createPatient, scheduleVisit, timerEvent, TINY_PNG } from './visits/visit-fixtures.ts';

interface Ids {
  patient: string;
  referral: string;
  visit: string;
  invitation: string;
  joinRequest: string;
  conversation: number;
  notification: string;
  audio: string;
  transcription: string;
}

interface Case {
  /** The OpenAPI path it covers (or `body:` + path for ids carried in the body). */
  readonly covers: string;
  readonly method: string;
  readonly path: (id: Ids | null) => string;
  readonly body?: (id: Ids | null) => unknown;
}

const rnd = () => randomUUID();
/** A conversation id no test creates (ids are drawn from 1 up). */
const rndConversation = () => 2_000_000_000 + Math.floor(Math.random() * 100_000_000);

// `id` is the victim's resources; null means "use random ids" (the control).
const cases: Case[] = [
  { covers: '/patient/chart-details/{referralUuid}', method: 'GET', path: (i) => `/patient/chart-details/${i?.referral ?? rnd()}` },
  { covers: '/patient/get-scheduled-visits/{referralUuid}', method: 'POST', path: (i) => `/patient/get-scheduled-visits/${i?.referral ?? rnd()}`, body: () => ({}) },
  { covers: '/patient/update/{uuid}', method: 'PUT', path: (i) => `/patient/update/${i?.patient ?? rnd()}`, body: () => ({ phone: '555-0199' }) },
  { covers: '/visit-details/{scheduleUuid}', method: 'GET', path: (i) => `/visit-details/${i?.visit ?? rnd()}` },
  { covers: '/audio/{uuid}', method: 'GET', path: (i) => `/audio/${i?.audio ?? rnd()}` },
  { covers: '/ai/status/{serverUuid}', method: 'GET', path: (i) => `/ai/status/${i?.transcription ?? rnd()}` },
  { covers: '/ai/retry/{serverUuid}', method: 'POST', path: (i) => `/ai/retry/${i?.transcription ?? rnd()}` },
  { covers: '/visit/{uuid}/mileage', method: 'PUT', path: (i) => `/visit/${i?.visit ?? rnd()}/mileage`, body: () => ({ total_miles: 3 }) },
  { covers: '/my-organization/invitations/{uuid}', method: 'DELETE', path: (i) => `/my-organization/invitations/${i?.invitation ?? rnd()}` },
  { covers: '/my-invitations/{uuid}/accept', method: 'POST', path: (i) => `/my-invitations/${i?.invitation ?? rnd()}/accept` },
  { covers: '/my-invitations/{uuid}/decline', method: 'POST', path: (i) => `/my-invitations/${i?.invitation ?? rnd()}/decline` },
  { covers: '/my-organization/join-requests/{uuid}/approve', method: 'POST', path: (i) => `/my-organization/join-requests/${i?.joinRequest ?? rnd()}/approve` },
  { covers: '/my-organization/join-requests/{uuid}/reject', method: 'POST', path: (i) => `/my-organization/join-requests/${i?.joinRequest ?? rnd()}/reject` },
  { covers: '/messages/{conversationId}', method: 'GET', path: (i) => `/messages/${i?.conversation ?? rndConversation()}` },
  { covers: '/messages/{conversationId}/read', method: 'PUT', path: (i) => `/messages/${i?.conversation ?? rndConversation()}/read` },
  { covers: '/notifications/{uuid}/read', method: 'PUT', path: (i) => `/notifications/${i?.notification ?? rnd()}/read` },
  {
    covers: 'body:/messages/send',
    method: 'POST',
    path: () => '/messages/send',
    body: (i) => ({ patient_email: 'intruder@example.test', patient_name: 'In Truder', body: 'hello', conversation_id: i?.conversation ?? rndConversation() }),
  },
  {
    covers: 'body:/visit-timer-events',
    method: 'POST',
    path: () => '/visit-timer-events',
    body: (i) => ({ schedule_uuid: i?.visit ?? rnd(), events: [timerEvent('start_travel', '2026-11-20T14:00:00Z')] }),
  },
  {
    covers: 'body:/patient-referral-end-visit-note',
    method: 'POST',
    path: () => '/patient-referral-end-visit-note',
    body: (i) => ({ schedule_uuid: i?.visit ?? rnd(), subjective: 's', objective: 'o', assessment: 'a', plan: 'p', signature: TINY_PNG }),
  },
  {
    covers: 'body:/schedule-visit-request-save',
    method: 'POST',
    path: () => '/schedule-visit-request-save',
    body: (i) => ({ patient_uuid: i?.patient ?? rnd(), visit_date: '2026-12-01', start_time: '09:00' }),
  },
  {
    covers: 'body:/scheduling/apply',
    method: 'POST',
    path: () => '/scheduling/apply',
    body: (i) => ({ date: '2026-11-20', visits: [{ schedule_uuid: i?.visit ?? rnd(), start_time: '10:00' }] }),
  },
];

/** Path ids that name public things, by design not tenant data. */
const PUBLIC_BY_DESIGN: Record<string, string> = {
  '/organizations/{uuid}/join-request': 'listed organizations are searchable by every clinician; asking to join one is the point',
  '/organizations/claim/{token}': 'a claim token is a bearer secret mailed to the contact; the preview holds no PHI',
  '/ai/checklist/{discipline}': 'a discipline code, not tenant data: every clinician gets the same checklist',
};

forEachBackend('tenant isolation', (backend) => {
  let server: TestServer;
  let ids: Ids;
  let victim: Awaited<ReturnType<typeof registerUser>>;
  let intruder: Awaited<ReturnType<typeof registerUser>>;

  before(async () => {
    server = await startTestServer(backend);
    const victimOrg = await orgWithAdmin(server);
    victim = victimOrg.admin;
    const patient = await createPatient(server, victim);
    const visit = await scheduleVisit(server, victim, { patient_uuid: patient.uuid, visit_date: '2026-11-20', start_time: '09:00' });
    // An invitation from the victim's organization, addressed to a third clinician.
    const invitee = await registerUser(server);
    const invited = await server.api('POST', '/my-organization/invitations', { token: victim.token, body: { email: invitee.email } });
    assert.equal(invited.status, 200, JSON.stringify(invited.body));
    const sent = await server.api('GET', '/my-organization/invitations', { token: victim.token });
    const invitation = sent.body.data.find((i: { email: string }) => i.email === invitee.email).uuid as string;
    // A join request to the victim's organization.
    const applicant = await registerUser(server);
    assert.equal((await server.api('POST', `/organizations/${victimOrg.uuid}/join-request`, { token: applicant.token })).status, 200);
    const pending = await server.api('GET', '/my-organization/join-requests', { token: victim.token });
    const joinRequest = pending.body.data[0].uuid as string;
    // A conversation with a patient, and a notification of the victim's.
    const sentMessage = await server.api('POST', '/messages/send', { token: victim.token, body: { patient_email: 'pat@example.test', patient_name: 'Pat', body: 'Hi' } });
    assert.equal(sentMessage.status, 200, JSON.stringify(sentMessage.body));
    const conversation = (await server.api('GET', '/messages/conversations', { token: victim.token })).body.data[0].id as number;
    const notification = await server.runtime.services.notifications.record(server.runtime.database.db, { userId: victim.uuid, type: 'note_ready' });
    // A recording of the victim's visit.
    const recorded = await upload(server, victim.token, [fileOf(speech('wav')), { name: 'schedule_uuid', value: visit }]);
    assert.equal(recorded.status, 200, JSON.stringify(recorded.body));
    // An AI run of the victim's visit (process-audio's own foreign-visit 404 is tested in test/server/ai/pipeline).
    const run = await processAudio(server, victim.token, { schedule_uuid: visit, discipline: 'PT', encounter_type: 'daily_note' }, fs.readFileSync(speech('wav')));
    assert.equal(run.status, 200, JSON.stringify(run.body));
    ids = { patient: patient.uuid, referral: patient.referral_uuid, visit, invitation, joinRequest, audio: recorded.body.data.uuid, transcription: run.body.data.transcription_uuid, conversation, notification };
    intruder = (await orgWithAdmin(server)).admin;
    // A verified intruder gets past the email check, so the walk reaches the invitation lookup.
    await verifyEmail(server, intruder);
  });
  after(() => server?.close());

  test('every id-taking route is walked or named public by design', async () => {
    const doc = await server.request('GET', `${API}/openapi.json`);
    const withIds = Object.keys(doc.body.paths as Record<string, unknown>)
      .filter((p) => p.includes('{'))
      .map((p) => p.slice(API.length));
    const walked = new Set(cases.map((c) => c.covers));
    const unclassified = withIds.filter((p) => !walked.has(p) && !(p in PUBLIC_BY_DESIGN));
    assert.deepEqual(unclassified, [], 'routes with a path id that this test does not walk');
  });

  test("another clinician's ids answer exactly like random ids, and change nothing", async () => {
    const before = await server.api('GET', `/visit-details/${ids.visit}`, { token: victim.token });
    for (const c of cases) {
      const foreign = await server.api(c.method, c.path(ids), { token: intruder.token, ...(c.body ? { body: c.body(ids) } : {}) });
      const random = await server.api(c.method, c.path(null), { token: intruder.token, ...(c.body ? { body: c.body(null) } : {}) });
      assert.ok(foreign.status >= 400, `${c.method} ${c.covers} let a foreign id through: ${foreign.status}`);
      assert.equal(foreign.status, random.status, `${c.method} ${c.covers}: ${foreign.status} vs ${random.status}`);
      assert.deepEqual(foreign.body, random.body, `${c.method} ${c.covers} answers a foreign id differently`);
    }
    const afterwards = await server.api('GET', `/visit-details/${ids.visit}`, { token: victim.token });
    assert.deepEqual(afterwards.body.data, before.body.data, "the victim's visit changed");
    const chart = await server.api('GET', `/patient/chart-details/${ids.referral}`, { token: victim.token });
    assert.equal(chart.body.data.patient.phone, null, "the victim's patient changed");
    const invitations = await server.api('GET', '/my-organization/invitations', { token: victim.token });
    assert.equal(invitations.body.data.find((i: { uuid: string }) => i.uuid === ids.invitation).status, 'pending');
    const messages = await server.api('GET', `/messages/${ids.conversation}`, { token: victim.token });
    assert.equal(messages.body.meta.total, 1, "a message was added to the victim's conversation");
    const unread = await server.api('GET', '/notifications?is_read=0', { token: victim.token });
    assert.ok(unread.body.data.some((n: { uuid: string }) => n.uuid === ids.notification), "the victim's notification was marked read");
    const requests = await server.api('GET', '/my-organization/join-requests', { token: victim.token });
    assert.equal(requests.body.data.find((r: { uuid: string }) => r.uuid === ids.joinRequest)?.status, 'pending');
  });
});
