/**
 * "Never invents", as a property: for random transcripts (clinical phrases, fillers, asides,
 * corrections, numbers as words, with or without punctuation, and arbitrary text), every
 * sentence of the note is made of words found, as many times, in the transcript span its
 * source_map entry names; spans lie inside the transcript; nothing is flagged unsupported
 * (the structurer has nothing to remove); vital signs come only from kept sentences.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { tokenize } from '../../../../server/src/services/ai/notes/clauses.ts';
import { structureNote } from '../../../../server/src/services/ai/notes/index.ts';

const PHRASES = [
  'patient reports pain is four out of ten', 'pt denies dizziness', 'her daughter says she is not eating much',
  'ambulated 150 feet with rolling walker and CGA', 'BP one thirty two over eighty', 'heart rate seventy two',
  'sats ninety six percent on room air', 'temp ninety eight point six', 'blood sugar one forty five',
  'ther ex 20 minutes', 'educated on HEP', 'patient tolerated treatment well', 'progressing toward STG 2',
  'remains homebound due to taxing effort', 'plan is to continue POC 2x week', 'will notify MD',
  'lungs clear bilaterally', 'wound measured 2 cm by 3 cm', 'swallow trials with thin liquids',
  'LB dressing with min assist', 'weight 182 pounds', 'MMT 4/5 hip flexors', 'sit to stand x5 with SBA',
];
const NOISE = ['um', 'uh', 'okay so', 'you know', 'good job', 'can you stand up for me', 'scratch that', 'I mean', 'sorry', 'alright', 'take a deep breath'];
const NUMBERS = ['twenty', 'one hundred', 'fifteen', '30', 'seventy five', 'one oh five'];
const SEPARATORS = [' ', '. ', ', ', '? ', '\n', ' and ', ' then '];

const transcript = fc
  .array(
    fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom(...PHRASES) },
      { weight: 2, arbitrary: fc.constantFrom(...NOISE) },
      { weight: 1, arbitrary: fc.constantFrom(...NUMBERS).map((n) => `${n} feet`) },
      { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
    ),
    { minLength: 1, maxLength: 25 },
  )
  .chain((parts) =>
    fc.array(fc.constantFrom(...SEPARATORS), { minLength: parts.length, maxLength: parts.length }).map((seps) =>
      parts.map((p, i) => p + seps[i]).join(''),
    ),
  );

const words = (s: string) => tokenize(s).map((t) => t.norm).filter(Boolean);

function assertFaithful(text: string, discipline: string) {
  const note = structureNote({ transcript: text, discipline, encounterType: 'daily_note' });
  for (const [section, entries] of Object.entries(note.source_map)) {
    const joined = entries.map((e) => e.sentence).join(' ');
    assert.equal(note.generated_soap[section as keyof typeof note.generated_soap], joined, 'the text is the mapped sentences');
    for (const e of entries) {
      assert.ok(!e.unsupported, `unsupported: ${e.sentence}`);
      assert.ok(e.char_start >= 0 && e.char_start < e.char_end && e.char_end <= text.length, 'span inside the transcript');
      const bag = words(text.slice(e.char_start, e.char_end));
      for (const w of words(e.sentence)) {
        const i = bag.indexOf(w);
        assert.ok(i >= 0, `"${w}" of "${e.sentence}" is not in its span "${text.slice(e.char_start, e.char_end)}"`);
        bag.splice(i, 1);
      }
    }
  }
  for (const c of Object.values(note.confidence_summary)) assert.ok(c >= 0 && c <= 1);
}

test('every output sentence is the transcript’s own words, within its span', () => {
  fc.assert(
    fc.property(transcript, fc.constantFrom('PT', 'PTA', 'OT', 'COTA', 'SLP', 'RN', 'XYZ'), (text, d) => assertFaithful(text, d)),
    { numRuns: 400 },
  );
});

test('arbitrary unicode text never crashes and never invents', () => {
  fc.assert(fc.property(fc.string({ maxLength: 400, unit: 'grapheme' }), (text) => assertFaithful(text, 'RN')), { numRuns: 300 });
});
