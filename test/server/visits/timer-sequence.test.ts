/** The timer-sequence validator and EVV derivation as pure functions, with properties. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { applyTimerEvents, deriveEvv, TIMER_SEQUENCE, type TimerFact } from '@fieldchart/schema/rules';

const T0 = Date.parse('2026-11-20T14:00:00Z');
const fact = (eventType: TimerFact['eventType'], minute: number): TimerFact => ({
  eventType,
  eventTime: new Date(T0 + minute * 60_000),
  latitude: 41.9,
  longitude: -87.6,
  accuracy: 5,
});

/** A valid full sequence: four non-decreasing times. */
const validSequence = fc
  .array(fc.integer({ min: 0, max: 120 }), { minLength: 4, maxLength: 4 })
  .map((gaps) => {
    let t = 0;
    return TIMER_SEQUENCE.map((type, i) => fact(type, (t += gaps[i] ?? 0)));
  });

test('examples: replay, missing predecessor, second different arrive, time going backwards', () => {
  const travel = fact('start_travel', 0);
  const arrive = fact('arrive', 20);
  const ok = applyTimerEvents([travel], [arrive, travel]);
  assert.ok(ok.ok);
  assert.deepEqual(ok.ok && { added: ok.added.length, replayed: ok.replayed }, { added: 1, replayed: 1 });

  const orphan = applyTimerEvents([], [fact('start_travel', 0), fact('start_documentation', 30)]);
  assert.deepEqual(orphan, { ok: false, index: 1, message: 'start_documentation must follow arrive' });

  const second = applyTimerEvents([travel, arrive], [fact('arrive', 25)]);
  assert.equal(second.ok, false);
  assert.match(!second.ok ? second.message : '', /arrive is already recorded/);

  const backwards = applyTimerEvents([travel, arrive], [fact('start_documentation', 10)]);
  assert.equal(!backwards.ok && backwards.index, 0);
  assert.match(!backwards.ok ? backwards.message : '', /earlier than arrive/);

  // arrive before start_travel in time: sorted, arrive comes first and has no predecessor.
  const early = applyTimerEvents([], [fact('start_travel', 10), fact('arrive', 5)]);
  assert.deepEqual(early.ok ? null : early.index, 1);
});

test('EVV: arrival and departure places, drive, onsite and documentation seconds', () => {
  const evv = deriveEvv([fact('start_travel', 0), { ...fact('arrive', 25), latitude: 1, longitude: 2, accuracy: 3 }, fact('start_documentation', 70), fact('complete', 85)]);
  assert.deepEqual(
    { drive: evv.driveSeconds, onsite: evv.onsiteSeconds, doc: evv.documentationSeconds, lat: evv.arrivalLat, lng: evv.arrivalLng, acc: evv.arrivalAccuracy },
    { drive: 1500, onsite: 3600, doc: 900, lat: 1, lng: 2, acc: 3 },
  );
  assert.equal(evv.departedAt?.toISOString(), new Date(T0 + 85 * 60_000).toISOString());
  const partial = deriveEvv([fact('start_travel', 0)]);
  assert.deepEqual([partial.arrivedAt, partial.driveSeconds, partial.onsiteSeconds], [null, null, null]);
});

test('property: a valid sequence split anywhere into stored and batches, in any array order, is accepted whole', () => {
  fc.assert(
    fc.property(validSequence, fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: 4 }), fc.integer(), (seq, a, b, seed) => {
      const [cut1, cut2] = a <= b ? [a, b] : [b, a];
      const stored = seq.slice(0, cut1);
      const batch = seq.slice(cut1, cut2);
      // Shuffle deterministically by seed, and include replays of stored events.
      const shuffled = [...batch, ...stored].sort((x, y) => ((x.eventTime.getTime() ^ seed) % 7) - ((y.eventTime.getTime() ^ seed) % 7));
      const r = applyTimerEvents(stored, shuffled);
      assert.ok(r.ok, !r.ok ? r.message : '');
      assert.equal(r.added.length, batch.length);
      assert.equal(r.replayed, stored.length);
      assert.deepEqual(
        r.events.map((e) => e.eventType),
        TIMER_SEQUENCE.slice(0, cut2),
      );
    }),
  );
});

test('property: replaying everything accepted adds nothing', () => {
  fc.assert(
    fc.property(validSequence, fc.integer({ min: 1, max: 4 }), (seq, n) => {
      const first = applyTimerEvents([], seq.slice(0, n));
      assert.ok(first.ok);
      const again = applyTimerEvents(first.events, seq.slice(0, n));
      assert.ok(again.ok);
      assert.equal(again.added.length, 0);
      assert.equal(again.replayed, n);
    }),
  );
});

test('property: whatever is accepted is a prefix of the sequence with non-decreasing times, and errors add nothing', () => {
  // Batches are a valid continuation of a valid stored prefix, then (most of the time) one
  // mutation, so both the accepted and the rejected branch run often; the counts are checked.
  type Mutation =
    | { kind: 'none' }
    | { kind: 'retype'; at: number; type: TimerFact['eventType'] }
    | { kind: 'retime'; at: number; minute: number }
    | { kind: 'drop'; at: number }
    | { kind: 'extra'; type: TimerFact['eventType']; minute: number };
  const minute = fc.integer({ min: 0, max: 500 });
  const anyType = fc.constantFrom(...TIMER_SEQUENCE);
  const mutation: fc.Arbitrary<Mutation> = fc.oneof(
    { arbitrary: fc.constant({ kind: 'none' as const }), weight: 3 },
    { arbitrary: fc.record({ kind: fc.constant('retype' as const), at: fc.nat(), type: anyType }), weight: 1 },
    { arbitrary: fc.record({ kind: fc.constant('retime' as const), at: fc.nat(), minute }), weight: 1 },
    { arbitrary: fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }), weight: 1 },
    { arbitrary: fc.record({ kind: fc.constant('extra' as const), type: anyType, minute }), weight: 1 },
  );
  const runs = 300;
  let accepted = 0;
  let rejected = 0;
  fc.assert(
    fc.property(validSequence, fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: 4 }), mutation, fc.integer(), (seq, cut, size, m, seed) => {
      const stored = seq.slice(0, cut);
      const batch = seq.slice(cut, Math.min(4, cut + size));
      if (m.kind === 'retype') batch[m.at % batch.length] = { ...(batch[m.at % batch.length] as TimerFact), eventType: m.type };
      if (m.kind === 'retime') batch[m.at % batch.length] = { ...(batch[m.at % batch.length] as TimerFact), eventTime: fact('arrive', m.minute).eventTime };
      if (m.kind === 'drop' && batch.length > 1) batch.splice(m.at % batch.length, 1);
      if (m.kind === 'extra') batch.push(fact(m.type, m.minute));
      const batchIn = batch.sort((x, y) => ((x.eventTime.getTime() ^ seed) % 7) - ((y.eventTime.getTime() ^ seed) % 7));
      const r = applyTimerEvents(stored, batchIn);
      if (!r.ok) {
        rejected++;
        assert.ok(r.index >= 0 && r.index < batchIn.length);
        return;
      }
      accepted++;
      if (m.kind === 'none') assert.equal(r.added.length, batchIn.length);
      assert.deepEqual(
        r.events.map((e) => e.eventType),
        TIMER_SEQUENCE.slice(0, r.events.length),
      );
      for (let i = 1; i < r.events.length; i++) {
        assert.ok((r.events[i]?.eventTime.getTime() ?? 0) >= (r.events[i - 1]?.eventTime.getTime() ?? 0));
      }
      assert.equal(r.events.length, stored.length + r.added.length);
    }),
    { numRuns: runs },
  );
  // Unmutated batches alone are ~3/7 of the runs and always accepted.
  assert.ok(accepted >= runs / 4, `only ${accepted} of ${runs} runs were accepted`);
  assert.ok(rejected >= runs / 10, `only ${rejected} of ${runs} runs were rejected`);
});

test('property: two steps whose times are swapped are rejected, and nothing is added', () => {
  fc.assert(
    fc.property(validSequence, fc.integer({ min: 0, max: 2 }), (seq, i) => {
      const a = seq[i] as TimerFact;
      const b = seq[i + 1] as TimerFact;
      fc.pre(a.eventTime.getTime() !== b.eventTime.getTime());
      const swapped = seq.map((e, k) => (k === i ? { ...e, eventTime: b.eventTime } : k === i + 1 ? { ...e, eventTime: a.eventTime } : e));
      const r = applyTimerEvents([], swapped);
      assert.equal(r.ok, false);
    }),
  );
});
