import type { ChecklistItem } from '../types.ts';

/**
 * Items every home-health discipline documents on a visit note (Medicare home-health
 * conditions of payment: homebound status, the skilled service and why it needs a
 * clinician, time spent, the response to it, progress toward goals, the plan and frequency,
 * safety, education of the patient or caregiver). Each discipline file picks from these and
 * adds its own; ids are prefixed by nothing so a clinician's `checked_items` survive a move
 * between disciplines.
 */
const NUM = '(?:\\d+|five|ten|fifteen|twenty|twenty[- ]five|thirty|forty|forty[- ]five|fifty|sixty|ninety)';

export const homebound: ChecklistItem = {
  id: 'homebound_status',
  label: 'Homebound status',
  prompt: 'Why is the patient homebound (taxing effort to leave home, assistance or device needed, medical contraindication)?',
  cues: [
    '\\bhome ?bound\\b',
    '\\bconfined to (?:the )?home\\b',
    '\\btaxing effort\\b',
    '\\bunable to leave (?:the )?(?:home|house)\\b',
    '\\bleaves? (?:the )?(?:home|house) only\\b',
    '\\bonly leaves? (?:the )?(?:home|house)\\b',
    '\\bbed ?bound\\b',
  ],
};

export const skilledNeed: ChecklistItem = {
  id: 'skilled_need',
  label: 'Skilled need',
  prompt: 'What about today’s visit required the skills of a clinician (assessment, training, a procedure the patient or caregiver cannot do safely)?',
  cues: [
    '\\bskilled\\b',
    '\\brequires? (?:the )?(?:skills|clinical|professional|therapist|nurse|cues|cueing|assistance|instruction)\\b',
    '\\bcontinues? to (?:need|require)\\b',
    '\\bneeds? (?:continued )?(?:skilled|therapy|nursing|instruction|training)\\b',
  ],
};

export const interventionMinutes: ChecklistItem = {
  id: 'interventions_minutes',
  label: 'Interventions with minutes',
  prompt: 'Which interventions were performed today, and for how many minutes each?',
  cues: [`\\b${NUM} ?(?:minutes?|mins?)\\b`, '\\bx ?\\d+ ?min'],
};

export const response: ChecklistItem = {
  id: 'response_to_treatment',
  label: 'Response to treatment',
  prompt: 'How did the patient tolerate and respond to today’s treatment?',
  cues: [
    '\\btolerat(?:ed|es|ing)\\b',
    '\\brespon(?:ded|se|ds)\\b',
    '\\b(?:rest breaks?|fatigued?|short of breath|sob|no adverse|without (?:complaint|adverse))\\b',
  ],
};

export const goalProgress: ChecklistItem = {
  id: 'progress_toward_goals',
  label: 'Progress toward goals',
  prompt: 'What progress did the patient make toward the short- and long-term goals?',
  cues: ['\\bgoals?\\b', '\\bstg\\b', '\\bltg\\b', '\\bprogress(?:ing|ed)?\\b', '\\bimprov(?:ed|ing|ement)\\b'],
};

export const safety: ChecklistItem = {
  id: 'safety',
  label: 'Safety and fall risk',
  prompt: 'Were safety concerns or fall risks addressed (home hazards, device use, precautions)?',
  cues: [
    '\\bsafe(?:ty|ly)?\\b',
    '\\bfalls?\\b',
    '\\b(?:throw )?rugs?\\b',
    '\\bgrab bars?\\b',
    '\\bhazards?\\b',
    '\\bprecautions?\\b',
  ],
};

export const planFrequency: ChecklistItem = {
  id: 'plan_frequency',
  label: 'Plan and frequency',
  prompt: 'What is the plan for the next visit and the visit frequency?',
  cues: [
    '\\bplan\\b',
    '\\bpoc\\b',
    '\\bnext (?:visit|session|week)\\b',
    '\\bcontinue\\b',
    '\\b(?:\\d|one|two|three|four|five)\\s?(?:x|times)\\s?(?:a |per |/)?(?:week|wk|w)\\b',
    '\\bfrequency\\b',
    '\\bdischarge\\b',
  ],
};

export const vitals: ChecklistItem = {
  id: 'vital_signs',
  label: 'Vital signs',
  prompt: 'What were the vital signs (blood pressure, heart rate, oxygen saturation, respirations, temperature)?',
  cues: [
    '\\bvitals?\\b',
    '\\bvital signs\\b',
    '\\bbp\\b',
    '\\bblood pressure\\b',
    '\\bheart rate\\b',
    '\\bpulse\\b',
    '\\bhr\\b',
    '\\bsp ?o2\\b',
    '\\bo2 sats?\\b',
    '\\boxygen sat',
    '\\bsats?\\b',
    '\\btemp(?:erature)?\\b',
    '\\brespirations?\\b',
  ],
};

export const pain: ChecklistItem = {
  id: 'pain',
  label: 'Pain',
  prompt: 'What was the patient’s pain level (0–10), location and effect on function?',
  cues: ['\\bpain\\b', '\\bsore(?:ness)?\\b', '\\bache\\b', '\\bhurts?\\b'],
};

export const medicationReview: ChecklistItem = {
  id: 'medication_review',
  label: 'Medication review',
  prompt: 'Were medications reviewed (changes, adherence, side effects)?',
  cues: [
    '\\bmedications?\\b',
    '\\bmeds?\\b',
    '\\bmed (?:list|rec|reconciliation|review)\\b',
    '\\bprescri(?:bed|ption)\\b',
    '\\bpill (?:box|organizer)\\b',
  ],
};

export const education: ChecklistItem = {
  id: 'education',
  label: 'Patient or caregiver education',
  prompt: 'What did you teach the patient or caregiver today, and how did they show understanding?',
  cues: [
    '\\beducat(?:ed|ion|e)\\b',
    '\\binstruct(?:ed|ion)\\b',
    '\\btaught\\b',
    '\\bteach(?:ing|-?back)?\\b',
    '\\btrained\\b',
    '\\bhep\\b',
    '\\bhome exercise program\\b',
    '\\bverbalized understanding\\b',
    '\\breturn demonstrat',
  ],
};
