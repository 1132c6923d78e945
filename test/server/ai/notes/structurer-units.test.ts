/**
 * The structurer's pieces on the cases the issue names: spoken numbers and vital signs,
 * corrections, disfluencies, asides, run-on speech, caregivers; the checklist data and its
 * pure matcher.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CHECKLIST_DISCIPLINES, checklistFor, matchChecklist, suggestionsFor } from '@fieldchart/schema/checklists';
import { clausesOf } from '../../../../server/src/services/ai/notes/clauses.ts';
import { classifyClause } from '../../../../server/src/services/ai/notes/classify.ts';
import { digitsFromWords } from '../../../../server/src/services/ai/notes/number-words.ts';
import { structureNote } from '../../../../server/src/services/ai/notes/index.ts';
import { abnormalVitals, extractVitals } from '../../../../server/src/services/ai/notes/vitals.ts';

test('spoken numbers as clinicians say them', () => {
  const cases: Array<[string, string]> = [
    ['BP one thirty two over eighty', 'BP 132 over 80'],
    ['temp ninety eight point six', 'temp 98.6'],
    ['one hundred twenty feet', '120 feet'],
    ['walked a hundred feet', 'walked 100 feet'],
    ['about a four out of ten', 'about a 4 out of 10'],
    ['one oh five over sixty', '105 over 60'],
    ['twenty-five minutes', '25 minutes'],
    ['point of care', 'point of care'],
    ['a patient', 'a patient'],
  ];
  for (const [spoken, digits] of cases) assert.equal(digitsFromWords(spoken), digits, spoken);
});

test('vital signs in digits, words, abbreviations; implausible values are not readings', () => {
  assert.deepEqual(extractVitals(['BP 128/76, HR 74, RR 18, SpO2 97% on RA, T 98.4, weight 182 lbs, FSBS 145, pain 4/10']), {
    blood_pressure: '128/76', heart_rate: 74, respiratory_rate: 18, oxygen_saturation: 97, temperature: 98.4, weight: 182, blood_glucose: 145, pain: 4,
  });
  assert.deepEqual(extractVitals(['blood pressure one forty two over eighty eight pulse seventy six sats ninety four percent']), {
    blood_pressure: '142/88', heart_rate: 76, oxygen_saturation: 94,
  });
  assert.deepEqual(extractVitals(['she rates her pain a seven', 'blood sugar was two forty six']), { pain: 7, blood_glucose: 246 });
  assert.deepEqual(extractVitals(['MMT 4/5 hip flexors', 'ambulated 150 feet', 'pain in the knee for 3 days', 'HR 400']), {});
  assert.deepEqual(abnormalVitals({ blood_pressure: '182/104', oxygen_saturation: 86, temperature: 100.8, blood_glucose: 52 }).length, 4);
  assert.deepEqual(abnormalVitals({ blood_pressure: '122/76', heart_rate: 72, oxygen_saturation: 97 }), []);
});

const texts = (t: string) => clausesOf(t).map((c) => c.text);

test('fillers and asides go, corrections keep the corrected value only', () => {
  assert.deepEqual(texts('Um, okay so, uh, patient reports she slept well. Good job! Can you stand up for me?'), ['Patient reports she slept well.']);
  assert.deepEqual(texts('Ambulated 15 feet with CGA, scratch that, it was 20 feet.'), ['Ambulated 20 feet with CGA.']);
  assert.deepEqual(texts('Ambulated fifty feet with CGA, sorry, seventy five feet.'), ['Ambulated seventy five feet with CGA.']);
  assert.deepEqual(texts('BP 138/84, HR 72, scratch that, HR 68.'), ['BP 138/84, HR 68.']);
  assert.deepEqual(texts('Patient ambulated 100 feet, actually the patient ambulated 80 feet with min assist.'), ['The patient ambulated 80 feet with min assist.']);
  // "sorry" that corrects nothing is left alone
  assert.deepEqual(texts('Patient says she is sorry she missed Tuesday.'), ['Patient says she is sorry she missed Tuesday.']);
});

test('run-on speech without punctuation is cut into clauses at clinical clause heads', () => {
  assert.deepEqual(
    texts('patient states she slept well last night ambulated 150 feet with rolling walker SBA vitals BP 130/80 heart rate 72 plan is to continue POC 2x week'),
    ['Patient states she slept well last night.', 'Ambulated 150 feet with rolling walker SBA.', 'Vitals BP 130/80.', 'Heart rate 72.', 'Plan is to continue POC 2x week.'],
  );
  assert.deepEqual(
    texts('her daughter says he has not been eating much he was alert and oriented times three lungs clear bilaterally will notify MD of weight gain'),
    ['Her daughter says he has not been eating much.', 'He was alert and oriented times three.', 'Lungs clear bilaterally.', 'Will notify MD of weight gain.'],
  );
});

test('sections: caregiver reports are subjective; abbreviations and discipline vocabulary are understood', () => {
  const s = (t: string, d = 'PT') => classifyClause(t, d).section;
  assert.equal(s('Her husband says she has been sleeping in the recliner.'), 'subjective');
  assert.equal(s('Gait training 25 min with FWW, ambulated 150 ft x2 with CGA.'), 'objective');
  assert.equal(s('Progressing toward STG 1.'), 'assessment');
  assert.equal(s('Remains homebound due to taxing effort to leave home.'), 'assessment');
  assert.equal(s('Continue POC 2x/wk, update HEP next visit.'), 'plan');
  assert.equal(s('PO trials of thin liquids via cup, 3 of 10 trials with delayed cough.', 'SLP'), 'objective');
  assert.equal(s('Lungs with crackles bilateral bases, 2+ pitting edema.', 'RN'), 'objective');
  assert.equal(s('LB dressing training 20 min with reacher and sock aid.', 'COTA'), 'objective');
});

test('the note: spans into the transcript, audio time from segments, flags for doses and low confidence', () => {
  const transcript = 'Patient reports taking Lasix 40 mg daily. BP 182/104. Plan to call MD.';
  const note = structureNote({
    transcript,
    discipline: 'RN',
    encounterType: 'daily_note',
    segments: [
      { start_ms: 0, end_ms: 2400, text: 'Patient reports taking Lasix 40 mg daily.', char_start: 0, char_end: 41 },
      { start_ms: 2400, end_ms: 3900, text: 'BP 182/104.', char_start: 42, char_end: 53 },
      { start_ms: 3900, end_ms: 5000, text: 'Plan to call MD.', char_start: 54, char_end: 70 },
    ],
  });
  assert.deepEqual(note.source_map.subjective[0], { sentence: 'Patient reports taking Lasix 40 mg daily.', char_start: 0, char_end: 41, start_ms: 0, end_ms: 2400 });
  assert.deepEqual(note.source_map.objective[0], { sentence: 'BP 182/104.', char_start: 42, char_end: 53, start_ms: 2400, end_ms: 3900 });
  assert.ok(note.verification_flags.some((f) => /blood pressure 182\/104 is high/.test(f)));
  assert.ok(note.verification_flags.some((f) => /Medication or dose to verify: "Patient reports taking Lasix 40 mg daily."/.test(f)));
  assert.equal(note.confidence_summary.assessment, 0);
  assert.ok(note.not_mentioned.includes('Skin and wound care'));
});

test('checklists: every discipline, unique ids, compiling cues, assistants share', () => {
  for (const code of ['PT', 'OT', 'SLP', 'RN']) {
    const c = checklistFor(code)!;
    assert.ok(c.items.length >= 10, code);
    const ids = c.items.map((i) => i.id);
    assert.equal(new Set(ids).size, ids.length, `${code} ids unique`);
    for (const i of c.items) {
      assert.ok(i.cues.length > 0 && i.label && i.prompt);
      for (const cue of i.cues) new RegExp(cue, 'i');
    }
    for (const id of ['homebound_status', 'skilled_need', 'response_to_treatment', 'progress_toward_goals', 'safety', 'plan_frequency', 'vital_signs', 'medication_review', 'education']) {
      assert.ok(ids.includes(id), `${code} has ${id}`);
    }
  }
  assert.equal(checklistFor('pta'), checklistFor('PT'));
  assert.equal(checklistFor(' cota '), checklistFor('OT'));
  assert.equal(checklistFor('dentist'), null);
  assert.ok(CHECKLIST_DISCIPLINES.includes('SLP'));
});

test('matcher: evidence is the sentence around the first cue; suggestions skip checked and matched items', () => {
  const t = 'Reviewed all medications with the daughter. Patient is homebound due to severe dyspnea. Plan: continue 2x week.';
  const pt = checklistFor('PT')!;
  const m = matchChecklist(pt, t);
  assert.deepEqual(m.medication_review, { matched: true, evidence: { char_start: 0, char_end: 43, text: 'Reviewed all medications with the daughter.' } });
  assert.equal(m.homebound_status!.evidence!.text, 'Patient is homebound due to severe dyspnea.');
  assert.deepEqual(m.vital_signs, { matched: false, evidence: null });
  const sug = suggestionsFor(pt, t, ['vital_signs']);
  const prompt = (id: string) => pt.items.find((i) => i.id === id)!.prompt;
  assert.ok(!sug.includes(prompt('vital_signs')) && !sug.includes(prompt('homebound_status')));
  assert.ok(sug.includes(prompt('education')));
});

test('cost grows linearly: a 20 000-word clause with no punctuation or clause heads', () => {
  // was quadratic (about 50 s) before the clause splitter and the span check kept running counts
  const transcript = Array(20_000).fill('blah').join(' ');
  const started = performance.now();
  const note = structureNote({ transcript, discipline: 'PT', encounterType: 'daily_note' });
  assert.equal(note.source_map.objective.length, 1);
  assert.ok(performance.now() - started < 10_000, `${Math.round(performance.now() - started)} ms`);
});

test('the generator hands the event loop back while it works on a long transcript', async () => {
  const { createLocalStructurer } = await import('../../../../server/src/services/ai/notes/index.ts');
  const transcript = Array(400).fill('Patient reports knee pain 3/10. Ambulated 150 feet with CGA. BP 128/76. Plan to continue 2x week.').join(' ');
  let ticks = 0;
  const timer = setInterval(() => (ticks += 1), 1);
  let finished = false;
  const p = createLocalStructurer().generate({ transcript, discipline: 'PT', encounterType: 'daily_note' }).then((n) => {
    finished = true;
    return n;
  });
  const note = await p;
  clearInterval(timer);
  assert.ok(finished && note.source_map.plan.length === 400);
  assert.ok(ticks >= 2, `timers ran ${ticks} times during generation`);

  const ac = new AbortController();
  const aborted = createLocalStructurer().generate({ transcript, discipline: 'PT', encounterType: 'daily_note' }, ac.signal);
  setImmediate(() => ac.abort(new Error('stop')));
  await assert.rejects(aborted, /stop/);
});
