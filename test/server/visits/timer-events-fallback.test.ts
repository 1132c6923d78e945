/**
 * The timer-events write when it keeps losing its race: every optimistic try finds the visit
 * changed between its read and its write, and after the last one the batch is stored through
 * the locked transaction — once, with its EVV record and one audit row, as the optimistic
 * path would have stored it. A unit test of `timer-events.ts` (imported by path) on a real
 * database: the "concurrent change" is a real update of the visit, made just before each
 * optimistic write.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { forEachBackend } from '../../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { createPatient, scheduleVisit, details, timerEvent } from './visit-fixtures.ts';
import type { Db } from '../../../server/src/db/database.ts';
import { rowsOf } from '../../../server/src/db/database.ts';
import { createAuditLog } from '../../../server/src/services/audit/audit-log.ts';
import { createTimerEvents } from '../../../server/src/services/visits/timer-events.ts';
import { systemClock } from '../../../server/src/clock.ts';

const at = (minute: number) => new Date(Date.parse('2026-11-20T14:00:00Z') + minute * 60_000).toISOString();

/**
 * The service on `db` with one difference: right before each optimistic write, another writer
 * changes the visit (`race`, by default an update that only moves its row_version on), so that
 * write finds nothing to do.
 */
function racingTimerEvents(db: Db, visitId: string, counter: { lost: number }, race?: (try_: number) => Promise<unknown>) {
  return createTimerEvents({
    db,
    clock: systemClock,
    audit: createAuditLog({ db, clock: systemClock }),
    beforeOptimisticWrite: async () => {
      await (race ? race(counter.lost) : db.execute(sql`update visits set updated_at = updated_at where id = ${visitId}::uuid`));
      counter.lost++;
    },
  });
}

forEachBackend('visits: timer events after the optimistic tries are lost', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('the locked fallback stores the batch once, derives EVV and writes one audit row; a replay stores nothing', async () => {
    const user = await registerUser(server);
    const patient = await createPatient(server, user);
    const visitId = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: '2026-11-20', start_time: '09:00' });
    const db = server.runtime.database.db;
    const counter = { lost: 0 };
    const service = racingTimerEvents(db, visitId, counter);
    const ctx = { actorUserId: user.uuid, organizationId: null, requestId: 'fallback-test' };
    const events = [timerEvent('start_travel', at(0)), timerEvent('arrive', at(25), { latitude: 41.9, longitude: -87.6, accuracy: 4 })];

    const outcome = await service.record(ctx, user.uuid, { schedule_uuid: visitId, events } as Parameters<typeof service.record>[2]);
    assert.equal(counter.lost, 3, 'every optimistic try lost its race before the fallback');
    assert.deepEqual(outcome, { recorded: 2, replayed: 0, status: 'in_progress' });

    const stored = rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from timer_events where visit_id = ${visitId}::uuid`));
    assert.equal(stored[0]?.n, 2);
    const visit = await details(server, user, visitId);
    assert.equal(visit.status, 'in_progress');
    assert.equal(visit.evv.travel_started_at, at(0));
    assert.equal(visit.evv.arrived_at, at(25));
    assert.deepEqual(visit.evv.arrival_location, { latitude: 41.9, longitude: -87.6, accuracy: 4 });
    assert.equal(visit.evv.drive_minutes, 25);
    const audits = rowsOf<{ outcome: string; n: number }>(
      await db.execute(sql`select outcome, count(*)::int as n from audit_log where resource_type = 'visit_timer' and resource_id = ${visitId} group by outcome`),
    );
    assert.deepEqual(audits.map((a) => ({ ...a })), [{ outcome: 'success', n: 1 }]);

    // The same batch again (a device's retry), losing every race again: replayed, nothing added.
    counter.lost = 0;
    const replay = await service.record(ctx, user.uuid, { schedule_uuid: visitId, events } as Parameters<typeof service.record>[2]);
    assert.equal(counter.lost, 3);
    assert.deepEqual(replay, { recorded: 0, replayed: 2, status: 'in_progress' });
    const again = rowsOf<{ n: number }>(await db.execute(sql`select count(*)::int as n from timer_events where visit_id = ${visitId}::uuid`));
    assert.equal(again[0]?.n, 2);
  });

  test('the fallback reads the visit again: an arrive that another writer stored meanwhile makes a different arrive a refusal', async () => {
    const user = await registerUser(server);
    const patient = await createPatient(server, user);
    const visitId = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: '2026-11-20', start_time: '09:00' });
    const db = server.runtime.database.db;
    const plain = createTimerEvents({ db, clock: systemClock, audit: createAuditLog({ db, clock: systemClock }) });
    const ctx = { actorUserId: user.uuid, organizationId: null, requestId: 'fallback-test' };
    const input = (events: unknown[]) => ({ schedule_uuid: visitId, events }) as Parameters<typeof plain.record>[2];
    await plain.record(ctx, user.uuid, input([timerEvent('start_travel', at(0))]));

    // The other writer is another device recording its own arrive (minute 20) through the
    // same service, before this batch's last optimistic write: only the locked read sees it.
    const counter = { lost: 0 };
    const racing = racingTimerEvents(db, visitId, counter, async (try_) => {
      if (try_ === 2) await plain.record(ctx, user.uuid, input([timerEvent('arrive', at(20))]));
      else await db.execute(sql`update visits set updated_at = updated_at where id = ${visitId}::uuid`);
    });
    await assert.rejects(racing.record(ctx, user.uuid, input([timerEvent('arrive', at(25))])), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'invalid_timer_sequence');
      assert.match(err.message, /arrive is already recorded/);
      return true;
    });
    assert.equal(counter.lost, 3);
    const stored = rowsOf<{ event_type: string; event_time: string }>(
      await db.execute(sql`select event_type, to_char(event_time at time zone 'UTC', 'HH24:MI') as event_time from timer_events where visit_id = ${visitId}::uuid order by event_time`),
    );
    assert.deepEqual(stored.map((r) => ({ ...r })), [{ event_type: 'start_travel', event_time: '14:00' }, { event_type: 'arrive', event_time: '14:20' }]);
    const refused = rowsOf<{ n: number }>(
      await db.execute(sql`select count(*)::int as n from audit_log where resource_type = 'visit_timer' and resource_id = ${visitId} and outcome <> 'success'`),
    );
    assert.equal(refused[0]?.n, 1);
  });
});
