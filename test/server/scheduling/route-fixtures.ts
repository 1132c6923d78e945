/** Shared by the route suites: a day of visits in Columbus, Ohio, placed by their ZIP codes. */
import assert from 'node:assert/strict';
import { registerUser, type TestServer } from '../../helpers/test-server.ts';

export type User = Awaited<ReturnType<typeof registerUser>>;

/** Public places in distinct Columbus ZIPs (the demo seed's kind of address). */
export const COLUMBUS = [
  '1 Capitol Square, Columbus, OH 43215',
  '800 E 17th Ave, Columbus, OH 43211',
  '1069 Jaeger St, Columbus, OH 43206',
  '1777 E Broad St, Columbus, OH 43203',
  '1871 N High St, Columbus, OH 43210',
  '4100 N High St, Columbus, OH 43214',
] as const;

export async function utcClinician(server: TestServer): Promise<User> {
  const user = await registerUser(server);
  const res = await server.api('PUT', '/my-settings', { token: user.token, body: { time_zone: 'UTC' } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return user;
}

export async function schedule(server: TestServer, user: User, body: Record<string, unknown>): Promise<string> {
  const res = await server.api('POST', '/schedule-visit-request-save', { token: user.token, body });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data.uuid as string;
}

/** The visits' stored start times, by id. */
export async function startTimes(server: TestServer, user: User, ids: readonly string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const id of ids) {
    const res = await server.api('GET', `/visit-details/${id}`, { token: user.token });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    out[id] = res.body.data.start_time as string;
  }
  return out;
}

export const minutesOf = (t: string) => Number(t.slice(0, 2)) * 60 + Number(t.slice(3, 5));

/** Checks the suggestion's times: each start = previous start + duration + buffer + ceil(drive in). */
export function assertTimesChain(visits: ReadonlyArray<{ suggested_start_time: string; drive_minutes: number }>, durations: Record<string, number>, ids: readonly string[], buffer: number): void {
  for (let k = 1; k < visits.length; k++) {
    const prev = visits[k - 1]!;
    const prevId = ids[k - 1]!;
    const gap = minutesOf(visits[k]!.suggested_start_time) - minutesOf(prev.suggested_start_time);
    // drive_minutes is rounded to 0.1 in the answer; the schedule uses the leg rounded up.
    const drive = gap - durations[prevId]! - buffer;
    assert.ok(drive >= visits[k]!.drive_minutes - 0.05 && drive < visits[k]!.drive_minutes + 1.05, `leg ${k}: gap ${gap} for drive ${visits[k]!.drive_minutes}`);
  }
}
