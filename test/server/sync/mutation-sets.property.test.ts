/**
 * One set of rules (services/sync/mutation-sets.ts): random sequences of queued mutations —
 * timer events in and out of sequence, replays, mileage older and newer, patients with taken
 * ids, values the database refuses, invalid arguments, a foreign visit, other kinds between —
 * are applied by two devices of two clinicians with the same data: one through the set-based
 * path, one strictly one mutation at a time. Both must give the same answers and leave the
 * same rows (visits, timer events, mileage, patients, referrals, audit entries), on both
 * databases. The clock stands still so the paths' timestamps compare.
 *
 * Seeds are printed; replay one with FUZZ_SEED=<seed>.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import { applyMutationBatch, type MutationDevice, type MutationMessage, type MutationReply } from '../../../server/src/services/sync/mutation-ledger.ts';
import { createMutationRunner, type MutationRunner } from '../../../server/src/services/sync/mutation-runner.ts';
import { isRefused } from '../../../server/src/services/batch-plan.ts';
import { forEachBackend } from '../../helpers/backends.ts';
import { manualClock } from '../../helpers/clock.ts';
import { RATE_LIMITS_OFF, startTestServer, type TestServer } from '../../helpers/test-server.ts';
import { createPatient, scheduleVisit, utcClinician, type User } from '../visits/visit-fixtures.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 15);
const VISITS = 3;
const SLOTS = 10;
const T0 = Date.parse('2026-11-20T09:00:00.000Z');

const at = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString();
const timerEvent = (visit: string, event_type: string, minutes: number) => ({
  schedule_uuid: visit,
  events: [{ event_type, event_time: at(minutes), latitude: 41.9, longitude: -87.6, accuracy: 8 }],
});
/** `[name, args]` pairs as one device's queued mutations, numbered from 1. */
const queued = (pairs: ReadonlyArray<readonly [string, object]>): MutationMessage[] =>
  pairs.map(([name, args], i) => ({ type: 'mutation', mutation_id: i + 1, name, args: args as Record<string, unknown>, client_time: at(0) }));

/** A mutation over abstract ids: visit k (k = VISITS: a visit of nobody's), patient slot k. */
type Abstract =
  | { kind: 'timer'; visit: number; events: Array<{ step: number; minutes: number }> }
  | { kind: 'mileage'; visit: number; miles: number; minutes: number | null }
  | { kind: 'create'; slot: number; referralSlot: number; name: string; nul: boolean; full: boolean }
  | { kind: 'bad-create' }
  | { kind: 'update'; slot: number; name: string };

const STEPS = ['start_travel', 'arrive', 'start_documentation', 'complete'] as const;
/** Mostly the clinician's own visits; now and then one of nobody's (refused: not found). */
const visitIdx = fc.oneof({ weight: 30, arbitrary: fc.integer({ min: 0, max: VISITS - 1 }) }, { weight: 1, arbitrary: fc.constant(VISITS) });
/** Step -1: the visit's next step in sequence order (mostly valid); others: any step (often not). */
const timerStep = fc.oneof({ weight: 15, arbitrary: fc.constant(-1) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 3 }) });
const mutation: fc.Arbitrary<Abstract> = fc.oneof(
  { weight: 10, arbitrary: fc.record({ kind: fc.constant('timer' as const), visit: visitIdx, events: fc.array(fc.record({ step: timerStep, minutes: fc.oneof({ weight: 15, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constantFrom(5, 30) }) }), { minLength: 1, maxLength: 2 }) }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('mileage' as const), visit: visitIdx, miles: fc.constantFrom(1.5, 12.4, 3.005), minutes: fc.option(fc.constantFrom(0, 60, 120), { nil: null }) }) },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('create' as const),
      slot: fc.integer({ min: 0, max: SLOTS - 1 }),
      referralSlot: fc.integer({ min: 0, max: SLOTS - 1 }),
      name: fc.constantFrom('Ann', 'Zoë', "O'Brien"),
      nul: fc.integer({ min: 0, max: 19 }).map((n) => n === 0),
      // Every optional field of the patient and its referral, or none.
      full: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'bad-create' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('update' as const), slot: fc.integer({ min: 0, max: SLOTS - 1 }), name: fc.constantFrom('Bea', 'Cy') }) },
);

forEachBackend('sync: mutation sets and one-by-one give the same answers and rows', (backend) => {
  let server: TestServer;
  const clock = manualClock(new Date('2026-11-20T18:00:00.000Z'));
  before(async () => {
    // Each run makes its fixtures through REST (a patient and three visits per side) under a
    // clock that stands still: the per-user limit would answer 429 from the 300th run on
    // (FUZZ_RUNS=300), and limits are not what this suite tests.
    server = await startTestServer(backend, { clock, env: RATE_LIMITS_OFF });
  });
  after(() => server.close());

  async function select(query: ReturnType<typeof sql>): Promise<Array<Record<string, unknown>>> {
    const result = await server.runtime.database.db.execute(query);
    return (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Array<Record<string, unknown>>;
  }

  test('random sequences, in random batches', async () => {
    const { services } = server.runtime;
    const log = server.runtime.app.log;
    const real = createMutationRunner({ services, sectionsOf: async () => null });
    let setsApplied = 0;
    /** Mutations applied set-based, by name: each kind must have been, or the test proves nothing of it. */
    const setApplied = new Map<string, number>();
    const setBased: MutationRunner = Object.assign((...a: Parameters<MutationRunner>) => real(...a), {
      runSet: (async (ctx, set) => {
        const plan = await (real.runSet as NonNullable<MutationRunner['runSet']>)(ctx, set);
        if (isRefused(plan)) return plan;
        // Counted once written: a set whose statement fails is applied again one by one.
        return {
          results: plan.results,
          async write() {
            await plan.write();
            setsApplied++;
            for (const m of set) setApplied.set(m.name, (setApplied.get(m.name) ?? 0) + 1);
          },
        };
      }) satisfies NonNullable<MutationRunner['runSet']>,
    });
    const oneByOne: MutationRunner = (...a) => real(...a);
    const users: [User, User] = [await utcClinician(server), await utcClinician(server)];
    const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
    console.log(`# ${backend.name}: fast-check seed ${seed} (replay with FUZZ_SEED=${seed})`);

    await fc.assert(
      fc.asyncProperty(fc.array(mutation, { minLength: 1, maxLength: 24 }), fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 8 }), async (sequence, cuts) => {
        const foreign = randomUUID();
        const run = randomUUID().slice(0, 8);
        const sides = await Promise.all(
          users.map(async (user) => {
            const patient = await createPatient(server, user);
            const visits: string[] = [];
            for (let k = 0; k < VISITS; k++) visits.push(await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: '2026-11-20', start_time: `0${k + 1}:00` }));
            return { user, visits, slots: Array.from({ length: SLOTS }, () => randomUUID()), referrals: Array.from({ length: SLOTS }, () => randomUUID()), clientId: randomUUID() };
          }),
        );
        const concrete = (side: (typeof sides)[number], a: Abstract, id: number, next: Map<number, number>): MutationMessage => {
          const visit = (k: number) => (k === VISITS ? foreign : (side.visits[k] as string));
          const m = (name: string, args: Record<string, unknown>): MutationMessage => ({ type: 'mutation', mutation_id: id, name, args, client_time: at(0) });
          switch (a.kind) {
            case 'timer':
              return m('visit.timer_events', {
                schedule_uuid: visit(a.visit),
                events: a.events.map((e) => {
                  const step = e.step >= 0 ? e.step : Math.min(3, next.get(a.visit) ?? 0);
                  next.set(a.visit, step + 1);
                  return { event_type: STEPS[step], event_time: at(step * 10 + e.minutes), latitude: 41.9, longitude: -87.6, accuracy: 8 };
                }),
              });
            case 'mileage':
              return m('visit.mileage', { uuid: visit(a.visit), mileage: { total_miles: a.miles, travel_miles: 1, ...(a.minutes === null ? {} : { recorded_at: at(a.minutes) }) } });
            case 'create':
              return m('patient.create', {
                uuid: side.slots[a.slot],
                referral_uuid: side.referrals[a.referralSlot],
                first_name: a.name,
                last_name: 'Set',
                ...(a.full ? { email: 'set@example.com', phone: '614-555-0100', address: '1 Set St, Columbus, OH' } : {}),
                referral: {
                  discipline: 'PT',
                  diagnosis_codes: a.nul ? ['M17\u000011'] : ['M17.11'],
                  ...(a.full ? { referral_source: 'Dr. Set', start_of_care: '2026-11-02', ordered_frequency: '2w4' } : {}),
                },
              });
            case 'bad-create':
              return m('patient.create', { last_name: 'No first name' });
            case 'update':
              return m('patient.update', { uuid: side.slots[a.slot], first_name: a.name });
          }
        };
        const answers: string[][] = [];
        for (const [s, side] of sides.entries()) {
          const claims = await services.accessTokens.verify(side.user.token, clock.now());
          assert.ok(claims);
          const device: MutationDevice = { userId: side.user.uuid, sessionId: claims.sessionId, clientId: side.clientId, organizationId: null, requestIdPrefix: `${run}-${s}`, protocol: 2 };
          const next = new Map<number, number>();
          const all = sequence.map((a, i) => concrete(side, a, i + 1, next));
          const replies: MutationReply[] = [];
          for (let i = 0, c = 0; i < all.length; c++) {
            const size = cuts[c % cuts.length] as number;
            const outcome = await applyMutationBatch(services, s === 0 ? setBased : oneByOne, device, all.slice(i, i + size), log);
            assert.equal(outcome.kind, 'applied');
            if (outcome.kind === 'applied') replies.push(...outcome.replies);
            i += size;
          }
          answers.push(replies.map((r) => normalise(JSON.stringify(r), side)));
        }
        assert.deepEqual(answers[0], answers[1], 'the same answers');
        // Rows keyed by random ids come back in id order: compared in the order of their abstract names.
        const [a, b] = await Promise.all(sides.map(async (side, s) => (await stateOf(side, `${run}-${s}:`)).map((row) => normalise(row, side)).sort()));
        assert.deepEqual(a, b, 'the same rows');
      }),
      { numRuns: RUNS, seed, endOnFailure: true },
    );
    console.log(`# ${backend.name}: ${setsApplied} sets applied set-based: ${JSON.stringify(Object.fromEntries(setApplied))}`);
    for (const name of ['visit.timer_events', 'visit.mileage', 'patient.create']) assert.ok((setApplied.get(name) ?? 0) > 0, `some ${name} went through a set`);
  });

  /** A device of `user`'s session, its audit entries under `prefix`. */
  async function deviceOf(user: User, prefix: string): Promise<MutationDevice> {
    const claims = await server.runtime.services.accessTokens.verify(user.token, clock.now());
    assert.ok(claims);
    return { userId: user.uuid, sessionId: claims.sessionId, clientId: randomUUID(), organizationId: null, requestIdPrefix: `${prefix}-${randomUUID().slice(0, 8)}`, protocol: 2 };
  }

  /** The real runner, each set it plans written by `write` (given the plan's own write and the set's size). */
  function runnerWriting(write: (own: () => Promise<void>, size: number) => Promise<void>): MutationRunner {
    const real = createMutationRunner({ services: server.runtime.services, sectionsOf: async () => null });
    return Object.assign((...a: Parameters<MutationRunner>) => real(...a), {
      runSet: (async (ctx, set) => {
        const plan = await (real.runSet as NonNullable<MutationRunner['runSet']>)(ctx, set);
        if (isRefused(plan)) return plan;
        return { results: plan.results, write: () => write(() => plan.write(), set.length) };
      }) satisfies NonNullable<MutationRunner['runSet']>,
    });
  }

  test('a set whose statement fails is lost whole and the batch applied again one by one: every mutation once, nothing of the first try kept', async () => {
    const { services } = server.runtime;
    const log = server.runtime.app.log;
    const writes: string[] = [];
    // The set's own statements, then one the database refuses (a NUL byte in text) in the same
    // pipeline, as a value refused by a constraint would: the set's rows are written, then lost.
    const runner = runnerWriting(async (own) => {
      const outcomes = await Promise.allSettled([own(), services.unitOfWork.db.execute(sql`select ${'a\u0000b'}::text`)]);
      writes.push(outcomes.map((o) => o.status).join(' '));
      for (const o of outcomes) if (o.status === 'rejected') throw o.reason;
    });
    const user = await utcClinician(server);
    const patient = await createPatient(server, user);
    const visit = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: '2026-11-20', start_time: '08:00' });
    const device = await deviceOf(user, 'fallback');
    const created = [randomUUID(), randomUUID()];
    const create = (uuid: string) => ({ uuid, referral_uuid: randomUUID(), first_name: 'Fall', last_name: 'Back', referral: { discipline: 'PT', diagnosis_codes: ['M17.11'] } });
    const batch = queued([
      ['visit.timer_events', timerEvent(visit, 'start_travel', 0)],
      ['visit.mileage', { uuid: visit, mileage: { total_miles: 3.5, recorded_at: at(5) } }],
      ['patient.create', create(created[0] as string)],
      ['visit.timer_events', timerEvent(visit, 'arrive', 10)],
      ['patient.create', create(created[1] as string)],
    ]);

    const first = await applyMutationBatch(services, runner, device, batch, log);
    assert.equal(first.kind, 'applied');
    assert.deepEqual(writes, ['fulfilled rejected'], 'the set was planned, written, and lost with the refused statement');
    const answers = first.kind === 'applied' ? first.replies.map((r) => `${r.mutation_id} ${r.type}`) : [];
    assert.deepEqual(answers, ['1 ack', '2 ack', '3 ack', '4 ack', '5 ack']);
    if (first.kind === 'applied') assert.equal(first.lastMutationId, 5);

    const counts = async () =>
      (
        await select(sql`
          select (select count(*)::int from timer_events where visit_id = ${visit}) as events,
            (select count(*)::int from visit_mileage where visit_id = ${visit}) as mileage,
            (select count(*)::int from patients where id in ${created}) as patients,
            (select count(*)::int from audit_log where request_id like ${`${device.requestIdPrefix}:%`} and outcome = 'success') as audits,
            (select coalesce(sum(cardinality(mutation_ids)), 0)::int from sync_mutation_digest_runs where client_id = ${device.clientId}) as digests,
            (select last_mutation_id::int from sync_clients where client_id = ${device.clientId}) as last`)
      )[0];
    const expected = { events: 2, mileage: 1, patients: 2, audits: 5, digests: 5, last: 5 };
    assert.deepEqual(await counts(), expected);

    // The same batch again (a lost answer): acknowledged as duplicates, nothing applied twice.
    const again = await applyMutationBatch(services, runner, device, batch, log);
    assert.equal(again.kind, 'applied');
    const replayed = again.kind === 'applied' ? again.replies.map((r) => `${r.mutation_id} ${r.type}`) : [];
    assert.deepEqual(replayed, ['1 ack', '2 ack', '3 ack', '4 ack', '5 ack']);
    assert.deepEqual(await counts(), expected);
    assert.equal(writes.length, 1, 'a replay plans no set');
  });

  test('a mutation a set would refuse goes alone: the ones before it and after it are applied as sets', async () => {
    const { services } = server.runtime;
    const log = server.runtime.app.log;
    /** The sizes of the sets written, in order. */
    const written: number[] = [];
    const runner = runnerWriting(async (own, size) => {
      await own();
      written.push(size);
    });
    const device = await deviceOf(await utcClinician(server), 'alone');
    // Ten creates; the fifth names the same id for the patient and its referral (refused by the rules).
    const batch = queued(
      Array.from({ length: 10 }, (_, i) => {
        const uuid = randomUUID();
        return ['patient.create', { uuid, referral_uuid: i === 4 ? uuid : randomUUID(), first_name: `Alone${i}`, last_name: 'Set' }] as const;
      }),
    );
    const outcome = await applyMutationBatch(services, runner, device, batch, log);
    assert.equal(outcome.kind, 'applied');
    const answers = outcome.kind === 'applied' ? outcome.replies.map((r) => `${r.mutation_id} ${r.type}`) : [];
    assert.deepEqual(answers, batch.map((m) => `${m.mutation_id} ${m.mutation_id === 5 ? 'reject' : 'ack'}`));
    assert.deepEqual(written, [4, 5], 'four as a set, the refused one alone, five as a set');
  });

  test('a set sees what an earlier set of its batch decided, also across a mutation refused by its envelope', async () => {
    const { services } = server.runtime;
    const log = server.runtime.app.log;
    const runner = createMutationRunner({ services, sectionsOf: async () => null });
    const user = await utcClinician(server);
    const patient = await createPatient(server, user);
    const visit = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: '2026-11-20', start_time: '09:00' });
    const device = await deviceOf(user, 'sets');
    const event = (event_type: string, minutes: number) => timerEvent(visit, event_type, minutes);
    const mileage = (miles: number, minutes: number) => ({ uuid: visit, mileage: { total_miles: miles, recorded_at: at(minutes) } });
    const batch = queued([
      ['visit.timer_events', event('start_travel', 0)],
      ['visit.mileage', mileage(2, 1)],
      ['visit.no_such_thing', {}],
      // The first set's start_travel again (a replay) and the next step.
      ['visit.timer_events', event('start_travel', 0)],
      ['visit.timer_events', event('arrive', 10)],
    ]);
    const outcome = await applyMutationBatch(services, runner, device, batch, log);
    assert.equal(outcome.kind, 'applied');
    const answers = outcome.kind === 'applied' ? outcome.replies.map((r) => (r.type === 'ack' ? { id: r.mutation_id, result: r.result } : { id: r.mutation_id, type: r.type })) : [];
    assert.deepEqual(answers, [
      { id: 1, result: { recorded: 1, replayed: 0, status: 'scheduled' } },
      { id: 2, result: { applied: true } },
      { id: 3, type: 'reject' },
      { id: 4, result: { recorded: 0, replayed: 1, status: 'scheduled' } },
      { id: 5, result: { recorded: 1, replayed: 0, status: 'in_progress' } },
    ]);
    const [row] = await select(sql`select status, travel_started_at is not null as travelled, arrived_at is not null as arrived, (select count(*)::int from timer_events where visit_id = ${visit}) as events from visits where id = ${visit}`);
    assert.deepEqual(row, { status: 'in_progress', travelled: true, arrived: true, events: 2 });
  });

  /** Ids of one side replaced by their abstract names, so the two sides compare. */
  function normalise(text: string, side: { user: User; visits: string[]; slots: string[]; referrals: string[] }): string {
    let out = text.replaceAll(side.user.uuid, 'USER');
    for (const [k, v] of side.visits.entries()) out = out.replaceAll(v, `VISIT${k}`);
    for (const [k, v] of side.slots.entries()) out = out.replaceAll(v, `PATIENT${k}`);
    for (const [k, v] of side.referrals.entries()) out = out.replaceAll(v, `REFERRAL${k}`);
    return out;
  }

  async function stateOf(side: { user: User; visits: string[]; slots: string[]; referrals: string[] }, requestPrefix: string): Promise<string[]> {
    const owner = side.user.uuid;
    const rows = [
      ...(await select(sql`
        select 'visit' as t, id, status, travel_started_at, arrived_at, arrival_lat, arrival_lng, arrival_accuracy, documentation_started_at,
          departed_at, departure_lat, departure_lng, departure_accuracy, drive_seconds, onsite_seconds, documentation_seconds, updated_at
        from visits where id in ${side.visits} order by start_time`)),
      ...(await select(sql`
        select 'event' as t, e.visit_id, e.event_type, e.event_time, e.latitude, e.longitude, e.accuracy, e.created_at
        from timer_events e where e.visit_id in ${side.visits} order by e.visit_id, e.event_time, e.event_type`)),
      ...(await select(sql`
        select 'mileage' as t, visit_id, total_miles::text, travel_miles::text, onsite_miles::text, recorded_at, created_at, updated_at, deleted_at
        from visit_mileage where visit_id in ${side.visits} order by visit_id`)),
      ...(await select(sql`
        select 'patient' as t, id, organization_id, name_search, email_enc is null as no_email, phone_enc is null as no_phone,
          address_enc is null as no_address, created_at, updated_at
        from patients where id in ${side.slots} order by id`)),
      ...(await select(sql`
        select 'referral' as t, id, patient_id, organization_id, status, discipline, diagnosis_codes, referral_source,
          start_of_care::text, ordered_frequency, discharged_at, created_at, updated_at
        from patient_referrals where id in ${side.referrals} order by id`)),
      ...(await select(sql`
        select 'audit' as t, action, resource_type, resource_id, outcome, split_part(request_id, ':', 2) as mutation, details, at
        from audit_log where actor_user_id = ${owner} and request_id like ${`${requestPrefix}%`} order by id`)),
    ];
    return rows.map((row) => JSON.stringify(row, (_k, v: unknown) => (v instanceof Date ? v.toISOString() : v)));
  }
});
