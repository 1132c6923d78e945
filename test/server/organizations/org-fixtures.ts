/**
 * Shared set-up for the organization suites: organizations made the way production makes
 * them (a clinician's POST /organizations/request, then the operator's `org.approve`, which
 * seats the requester as admin), and the operator operations run in-process.
 */
import assert from 'node:assert/strict';
import { operationContext, runOperation } from '@fieldchart/server';
import { registerUser, type TestServer } from '../../helpers/test-server.ts';

export type User = Awaited<ReturnType<typeof registerUser>>;

let counter = 0;

/** A name no other test uses. */
export function uniqueName(prefix = 'Org'): string {
  counter++;
  return `${prefix} ${counter} ${process.pid} ${Math.random().toString(36).slice(2, 8)}`;
}

export function operate<T = any>(server: TestServer, name: string, args: unknown = {}): Promise<T> {
  return runOperation(operationContext(server.runtime.services, server.runtime.database), name, args) as Promise<T>;
}

export interface Org {
  readonly uuid: string;
  readonly name: string;
  readonly admin: User;
}

/** A listed, active organization whose admin is a fresh clinician. */
export async function orgWithAdmin(
  server: TestServer,
  opts: { type?: string; name?: string; admin?: User } = {},
): Promise<Org> {
  const admin = opts.admin ?? (await registerUser(server));
  const name = opts.name ?? uniqueName();
  const res = await server.api('POST', '/organizations/request', { token: admin.token, body: { name, type: opts.type ?? 'clinic' } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const listed = await operate(server, 'org.list', { search: name });
  const uuid = listed.items.find((o: { name: string; status: string }) => o.name === name && o.status === 'requested')?.uuid as string;
  assert.ok(uuid, `organization ${name} not found by the operator`);
  const approved = await operate(server, 'org.approve', { organization: uuid });
  assert.equal(approved.seated_admin, admin.uuid);
  return { uuid, name, admin };
}

/** A fresh clinician seated as member of `org`: a join request its admin approves. */
export async function memberOf(server: TestServer, org: Org): Promise<User> {
  const user = await registerUser(server);
  const asked = await server.api('POST', `/organizations/${org.uuid}/join-request`, { token: user.token });
  assert.equal(asked.status, 200, JSON.stringify(asked.body));
  const pending = await server.api('GET', '/my-organization/join-requests', { token: org.admin.token });
  const request = pending.body.data.find((r: { user: { uuid: string } }) => r.user.uuid === user.uuid);
  const approved = await server.api('POST', `/my-organization/join-requests/${request.uuid}/approve`, { token: org.admin.token });
  assert.equal(approved.status, 200, JSON.stringify(approved.body));
  return user;
}

/** The first match of `pattern` in the newest mail to `to` that matches `subject`. */
export async function fromMail(server: TestServer, to: string, subject: RegExp, pattern: RegExp): Promise<string> {
  const mail = await server.mail.waitFor(to, (m) => subject.test(m.subject));
  const match = pattern.exec(mail.text);
  assert.ok(match?.[1], `no ${pattern} in mail "${mail.subject}":\n${mail.text}`);
  return match[1];
}

/**
 * The expected solo defaults — rule 3 plus our documented choice for the other nine (README:
 * Organizations). Stated here, not imported from the service, so the tests can disagree with it.
 */
export const EXPECTED_SOLO_DEFAULTS = {
  billing_codes: false,
  icd10_suggestions: false,
  staffing_offers: false,
  earnings: false,
  coverage_areas: false,
  follow_ups: false,
  ai_conversation: true,
  ai_voice: true,
  copy_last_visit: false,
  credential_sync: false,
  coverage_sync: false,
} as const;

