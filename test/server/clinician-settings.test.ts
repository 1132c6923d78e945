import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { eq } from 'drizzle-orm';
import { clinicianSettings } from '@fieldchart/schema/db';
import { DEFAULT_MILEAGE_RATE, DEFAULT_PAY_RATES } from '../../server/src/services/clinician-settings.ts';
import { localDate, zonedInstant } from '@fieldchart/schema/rules';
import { forEachBackend } from '../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../helpers/test-server.ts';

test('zonedInstant is DST-correct and localDate follows the zone', () => {
  assert.equal(zonedInstant('2026-03-08', '09:00', 'America/New_York').toISOString(), '2026-03-08T13:00:00.000Z');
  assert.equal(zonedInstant('2026-03-07', '09:00', 'America/New_York').toISOString(), '2026-03-07T14:00:00.000Z');
  assert.equal(zonedInstant('2026-07-01', '23:30', 'Asia/Kolkata').toISOString(), '2026-07-01T18:00:00.000Z');
  assert.equal(localDate(new Date('2026-11-21T03:00:00Z'), 'America/Chicago'), '2026-11-20');
  assert.equal(localDate(new Date('2026-11-21T03:00:00Z'), 'Europe/Berlin'), '2026-11-21');
});

forEachBackend('clinician settings', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('defaults, then a partial update that keeps the rest', async () => {
    const u = await registerUser(server);
    const initial = await server.api('GET', '/my-settings', { token: u.token });
    assert.equal(initial.status, 200);
    assert.equal(initial.body.data.time_zone, 'America/New_York');
    assert.equal(initial.body.data.mileage_rate, 0.7);
    assert.equal(initial.body.data.pay_rates.routine, 80);

    const put = await server.api('PUT', '/my-settings', { token: u.token, body: { time_zone: 'America/Denver', pay_rates: { routine: 92.5 } } });
    assert.equal(put.status, 200);
    assert.deepEqual(
      { tz: put.body.data.time_zone, routine: put.body.data.pay_rates.routine, evaluation: put.body.data.pay_rates.evaluation, rate: put.body.data.mileage_rate },
      { tz: 'America/Denver', routine: 92.5, evaluation: 130, rate: 0.7 },
    );
    const again = await server.api('GET', '/my-settings', { token: u.token });
    assert.deepEqual(again.body.data, put.body.data);
  });

  test('saving one setting stores only that setting: defaults are not pinned into the row', async () => {
    const u = await registerUser(server);
    const put = await server.api('PUT', '/my-settings', { token: u.token, body: { time_zone: 'America/Chicago' } });
    assert.equal(put.status, 200);
    const { db } = server.runtime.database;
    const [row] = await db.select().from(clinicianSettings).where(eq(clinicianSettings.userId, u.uuid));
    assert.deepEqual(row?.payRates, {});
    assert.equal(row?.timeZone, 'America/Chicago');
    const got = await server.api('GET', '/my-settings', { token: u.token });
    assert.deepEqual(got.body.data, { time_zone: 'America/Chicago', pay_rates: { ...DEFAULT_PAY_RATES }, mileage_rate: DEFAULT_MILEAGE_RATE });

    // A later save merges into the stored rates without touching the time zone.
    await server.api('PUT', '/my-settings', { token: u.token, body: { pay_rates: { routine: 85 } } });
    await server.api('PUT', '/my-settings', { token: u.token, body: { pay_rates: { evaluation: 140 } } });
    const [after2] = await db.select().from(clinicianSettings).where(eq(clinicianSettings.userId, u.uuid));
    assert.deepEqual(after2?.payRates, { routine: 85, evaluation: 140 });
    assert.equal(after2?.timeZone, 'America/Chicago');
  });

  test('422 for an unknown time zone, visit type or field; 401 without a token', async () => {
    const u = await registerUser(server);
    for (const body of [{ time_zone: 'Mars/Olympus' }, { pay_rates: { massage: 10 } }, { mileage_rate: -1 }, { colour: 'blue' }]) {
      const res = await server.api('PUT', '/my-settings', { token: u.token, body });
      assert.equal(res.status, 422, JSON.stringify(body));
      assert.equal(res.body.code, 'validation_failed');
    }
    assert.equal((await server.api('GET', '/my-settings')).status, 401);
    assert.equal((await server.api('PUT', '/my-settings', { body: {} })).status, 401);
  });
});
