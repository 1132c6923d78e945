/**
 * The feed's visit rows are the REST visit record's fields (`visitFieldsOf`, which GET
 * /visit-details and the other visit answers use) for any stored visit: sealed address and
 * notes opened, EVV times as ISO instants (microseconds dropped, as the driver drops them),
 * locations only with both coordinates, minutes rounded as REST rounds them; a deleted visit,
 * or one the window no longer holds, is a delete. Whatever builds the rows — Node from whole
 * rows, or the database writing the change text itself — must keep this.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { eq, inArray, sql } from 'drizzle-orm';
import { visits } from '@fieldchart/schema/db';
import type { Change } from '@fieldchart/schema/sync';
import { addDays } from '@fieldchart/schema/rules';
import { visitFieldsOf } from '../../../server/src/services/visits/visit-records.ts';
import { feedOf } from '../../../server/src/sync/service-hooks.ts';
import { forEachBackend } from '../../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../../helpers/test-server.ts';

const instant = fc.option(fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2030-12-31T23:59:59Z'), noInvalidDate: true }), { nil: null });
// GPS values; -0 is left out (JSON writes it as 0 on one side and -0 on the other, the same number to a device).
const coordinate = fc.option(fc.double({ min: -180, max: 180, noNaN: true }).filter((x) => !Object.is(x, -0)), { nil: null });
const seconds = fc.option(fc.oneof(fc.integer({ min: 0, max: 200_000 }), fc.constantFrom(0, 29, 30, 89, 90, 150)), { nil: null });
const phiText = fc.option(fc.string({ maxLength: 40, unit: 'grapheme' }), { nil: null });

const visitArb = fc.record({
  address: phiText,
  notes: phiText,
  startTime: fc.constantFrom('08:00', '09:30', '13:15'),
  durationMinutes: fc.integer({ min: 1, max: 480 }),
  status: fc.constantFrom('scheduled', 'in_progress', 'completed', 'cancelled', 'missed'),
  visitType: fc.constantFrom('routine', 'evaluation', 'discharge'),
  aiAssisted: fc.boolean(),
  travelStartedAt: instant,
  arrivedAt: instant,
  arrivalLat: coordinate,
  arrivalLng: coordinate,
  arrivalAccuracy: coordinate,
  documentationStartedAt: instant,
  departedAt: instant,
  departureLat: coordinate,
  departureLng: coordinate,
  departureAccuracy: coordinate,
  driveSeconds: seconds,
  onsiteSeconds: seconds,
  documentationSeconds: seconds,
  completedAt: instant,
  /** Microseconds the database holds beyond the millisecond (the driver drops them). */
  micros: fc.integer({ min: 0, max: 999 }),
  /** What happens before the second read: nothing, deleted, or moved out of the window. */
  then: fc.constantFrom('keep', 'keep', 'delete', 'leave_window'),
});

forEachBackend('feed visit rows', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(backend);
  });
  after(() => server.close());

  test('property: every visit row of the feed is the REST record of the stored visit; deletes and departures are tombstones', async () => {
    const { phi } = server.runtime.services;
    const db = server.runtime.services.unitOfWork.db;
    const feed = feedOf(server.runtime.services);
    // The embedded server's feed builds a full read's rows after its transaction instead of as they stream.
    const embedded = feedOf(server.runtime.services, { oneSession: backend.name === 'pglite' });
    const today = new Date().toISOString().slice(0, 10);

    const expectRows = async (changes: readonly Change[], ids: readonly string[], gone: ReadonlySet<string>) => {
      const stored = await db.select().from(visits).where(inArray(visits.id, [...ids]));
      const byId = new Map(changes.filter((c) => c.table === 'visits').map((c) => [c.id, c]));
      for (const row of stored) {
        const c = byId.get(row.id);
        assert.ok(c, `visit ${row.id} is in the feed`);
        if (gone.has(row.id)) {
          assert.deepEqual(c, { table: 'visits', op: 'delete', id: row.id, version: row.rowVersion });
        } else {
          assert.equal(c.op, 'upsert');
          assert.equal(c.version, row.rowVersion);
          assert.deepEqual(c.op === 'upsert' ? c.row : null, visitFieldsOf(phi, row));
        }
      }
    };

    await fc.assert(
      fc.asyncProperty(fc.array(visitArb, { minLength: 1, maxLength: 6 }), async (specs) => {
        const user = await registerUser(server);
        const ids = specs.map(() => randomUUID());
        await db.insert(visits).values(
          specs.map((s, i) => {
            const id = ids[i] as string;
            return {
              id,
              ownerId: user.uuid,
              visitDate: today,
              startTime: s.startTime,
              durationMinutes: s.durationMinutes,
              status: s.status,
              visitType: s.visitType,
              addressEnc: phi.seal(s.address, 'visits', 'address_enc', id),
              notesEnc: phi.seal(s.notes, 'visits', 'notes_enc', id),
              aiAssisted: s.aiAssisted,
              travelStartedAt: s.travelStartedAt,
              arrivedAt: s.arrivedAt,
              arrivalLat: s.arrivalLat,
              arrivalLng: s.arrivalLng,
              arrivalAccuracy: s.arrivalAccuracy,
              documentationStartedAt: s.documentationStartedAt,
              departedAt: s.departedAt,
              departureLat: s.departureLat,
              departureLng: s.departureLng,
              departureAccuracy: s.departureAccuracy,
              driveSeconds: s.driveSeconds,
              onsiteSeconds: s.onsiteSeconds,
              documentationSeconds: s.documentationSeconds,
              completedAt: s.completedAt,
            };
          }),
        );
        for (const [i, s] of specs.entries()) {
          if (s.micros === 0) continue;
          const us = sql.raw(`interval '${s.micros} microseconds'`);
          await db.execute(sql`update ${visits} set completed_at = completed_at + ${us}, arrived_at = arrived_at + ${us}, created_at = created_at + ${us} where id = ${ids[i]}::uuid`);
        }

        const first = await feed.read(user.uuid, null, new Date());
        await expectRows(first.changes, ids, new Set());
        const same = await embedded.read(user.uuid, null, new Date());
        assert.deepEqual([...same.serialized].sort(), [...first.serialized].sort());

        const gone = new Set<string>();
        for (const [i, s] of specs.entries()) {
          const id = ids[i] as string;
          if (s.then === 'delete') await db.update(visits).set({ deletedAt: new Date() }).where(eq(visits.id, id));
          else if (s.then === 'leave_window') await db.update(visits).set({ visitDate: addDays(today, 400) }).where(eq(visits.id, id));
          else await db.update(visits).set({ status: s.status === 'completed' ? 'completed' : 'in_progress' }).where(eq(visits.id, id));
          if (s.then !== 'keep') gone.add(id);
        }
        const second = await feed.read(user.uuid, first.cursor, new Date());
        assert.equal(second.reset, null);
        await expectRows(second.changes, ids, gone);
      }),
      { numRuns: 25 },
    );
  });
});
