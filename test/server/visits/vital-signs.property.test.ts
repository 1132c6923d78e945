/**
 * The vital-signs normaliser (services/visits/vital-signs.ts) on its own: aliases and units,
 * and, for any JSON a device could send, that it never throws, stays within its bounds, keeps
 * canonical values numeric, and changes nothing when run on its own output.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { normalizeVitals, VITAL_LIMITS, VITAL_NAMES } from '../../../server/src/services/visits/vital-signs.ts';

const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);

test('aliases and units normalise to the canonical names', () => {
  const cases: Array<[Record<string, unknown>, Record<string, unknown>]> = [
    [{ bp: '120/80 mmHg' }, { systolic_bp: 120, diastolic_bp: 80 }],
    [{ blood_pressure: { systolic: 130, diastolic: 85 } }, { systolic_bp: 130, diastolic_bp: 85 }],
    [{ HR: '72 bpm' }, { heart_rate: 72 }],
    [{ 'O2 Sat': '95%' }, { oxygen_saturation: 95 }],
    [{ temperature: '100.4 F' }, { temperature_f: 100.4 }],
    [{ temp: 37 }, { temperature_f: 98.6 }],
    [{ temp_c: '38' }, { temperature_f: 100.4 }],
    [{ weight_kg: 100 }, { weight_lb: 220.5 }],
    [{ weight: '150 lbs' }, { weight_lb: 150 }],
    [{ glucose: '5.5 mmol/L' }, { blood_glucose: 99 }],
    [{ rr: 18, pain: '4/10' }, { respiratory_rate: 18, pain_level: 4 }],
  ];
  for (const [input, expected] of cases) assert.deepEqual(normalizeVitals(input).vitals, expected, JSON.stringify(input));
  assert.deepEqual(normalizeVitals({ pulse: 70, hr: 90 }), { vitals: { heart_rate: 70, unreadable: { hr: 90 } }, vitalFlags: [], reviewFlags: ['heart_rate_conflicting'] });
  // A conversion that overflows is no number (fast-check found -9.99e306 °C: -Infinity °F, null once stored).
  for (const temp of [-9.987184082568421e306, -1e308, `1${'0'.repeat(308)} C`]) {
    const { vitals } = normalizeVitals({ temp });
    assert.deepEqual(vitals, { unreadable: { temp } }, String(temp));
  }
  assert.deepEqual(normalizeVitals({ weight_kg: 1.7e308 }).vitals, { unreadable: { weight_kg: 1.7e308 } });
  assert.deepEqual(normalizeVitals(undefined), { vitals: null, vitalFlags: [], reviewFlags: [] });
  assert.deepEqual(normalizeVitals({}), { vitals: null, vitalFlags: [], reviewFlags: [] });
  // A member named like Object.prototype's stays plain data.
  const proto = JSON.parse('{"__proto__": {"x": 1}, "toString": "y"}');
  const out = normalizeVitals(proto).vitals as Record<string, unknown>;
  assert.ok(Object.hasOwn(out, '__proto__') && Object.hasOwn(out, 'toString'));
  assert.equal(Object.getPrototypeOf(out), Object.prototype);
});

test(`any JSON: never throws, bounded, canonical values numeric, idempotent (seed ${SEED})`, () => {
  const key = fc.oneof(fc.constantFrom('bp', 'pulse', 'hr', 'spo2', 'temp', 'weight', 'glucose', 'pain', 'resp', 'unreadable', '__proto__', 'heart_rate'), fc.string({ maxLength: 12 }));
  // Numbers of a body's magnitude and near the largest double, bare, as decimal text with a unit to
  // convert, and as {value, unit}: a conversion may overflow (fast-check found it once by chance).
  const number = fc
    .tuple(fc.boolean(), fc.double({ min: 1, max: 10, noNaN: true }), fc.oneof(fc.integer({ min: -3, max: 6 }), fc.integer({ min: 300, max: 308 })))
    .map(([negative, m, e]) => (negative ? -m : m) * 10 ** e)
    .filter(Number.isFinite);
  const unit = fc.constantFrom('', ' C', ' F', ' kg', ' mmol/L');
  const reading = fc.oneof(
    number,
    fc.tuple(number, unit).map(([n, u]) => `${BigInt(Math.trunc(n))}${u}`),
    fc.record({ value: number, unit: fc.constantFrom('C', 'F', 'kg', 'mmol/l') }),
  );
  const value = fc.oneof(fc.jsonValue({ maxDepth: 5 }), reading, fc.constantFrom('120/80', '98.6 F', '37 C', '97%', '82 kg', 'x'.repeat(20_000)));
  const input = fc.oneof(fc.dictionary(key, value, { maxKeys: 80 }), fc.jsonValue({ maxDepth: 3 }));
  fc.assert(
    fc.property(input, (raw) => {
      const first = normalizeVitals(raw);
      if (first.vitals === null) return;
      const json = JSON.stringify(first.vitals);
      assert.ok(Object.keys(first.vitals).length <= VITAL_LIMITS.maxMembers);
      assert.ok(Buffer.byteLength(json) <= VITAL_LIMITS.maxJsonBytes);
      for (const name of VITAL_NAMES) if (name in first.vitals) assert.equal(typeof first.vitals[name], 'number');
      for (const flag of [...first.vitalFlags, ...first.reviewFlags]) assert.match(flag, /^[a-z_]+$/);
      const again = normalizeVitals(JSON.parse(json));
      assert.equal(JSON.stringify(again.vitals), json);
      assert.deepEqual(again.vitalFlags, first.vitalFlags);
    }),
    { seed: SEED, numRuns: 300 },
  );
});
