/** Shared set-up for the visit suites: patients made through the API, visits scheduled through it. */
import assert from 'node:assert/strict';
import { registerUser, type TestServer } from '../../helpers/test-server.ts';

export type User = Awaited<ReturnType<typeof registerUser>>;

/** A 1×1 PNG: what a real signature pad produces, only smaller. */
export const TINY_PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
/** A 1×1 GIF: a real image, of a type signatures may not use. */
export const TINY_GIF = 'R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7';

/** A fresh clinician in UTC: "today" is then the same date for the server and the test. */
export async function utcClinician(server: TestServer): Promise<User> {
  const user = await registerUser(server);
  const res = await server.api('PUT', '/my-settings', { token: user.token, body: { time_zone: 'UTC' } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return user;
}

export async function createPatient(server: TestServer, user: User, body: Record<string, unknown> = {}): Promise<{ uuid: string; referral_uuid: string }> {
  const res = await server.api('POST', '/patient/create', {
    token: user.token,
    body: { first_name: 'Marguerite', last_name: 'Okafor', address: '1200 W Fullerton Ave, Chicago, IL 60614', ...body },
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data;
}

export async function scheduleVisit(server: TestServer, user: User, body: Record<string, unknown>): Promise<string> {
  const res = await server.api('POST', '/schedule-visit-request-save', { token: user.token, body });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data.uuid as string;
}

export async function details(server: TestServer, user: User, uuid: string) {
  const res = await server.api('GET', `/visit-details/${uuid}`, { token: user.token });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data;
}

export const gps = { latitude: 41.925, longitude: -87.652, accuracy: 8 };

export function timerEvent(event_type: string, event_time: string, place: Partial<typeof gps> = {}) {
  return { event_type, event_time, ...gps, ...place };
}
