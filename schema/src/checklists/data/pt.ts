import type { Checklist } from '../types.ts';
import * as c from './common.ts';

/** Physical therapy (also used by PTA visits). */
export const ptChecklist: Checklist = {
  discipline: 'PT',
  version: '2026.11.1',
  items: [
    c.homebound,
    c.skilledNeed,
    c.interventionMinutes,
    {
      id: 'functional_mobility',
      label: 'Functional mobility with assist level',
      prompt: 'What were gait, transfer and bed mobility distances with device and assist level (independent, SBA, CGA, min/mod/max assist)?',
      cues: [
        '\\bambulat(?:ed|es|ion|ing)\\b',
        '\\bgait\\b',
        '\\btransfers?\\b',
        '\\bbed mobility\\b',
        '\\b(?:sba|cga|min(?:imal)? ?a(?:ssist)?|mod(?:erate)? ?a(?:ssist)?|max(?:imal)? ?a(?:ssist)?|stand by assist|contact guard)\\b',
        '\\bstairs?\\b',
        '\\b(?:\\d+|[a-z]+) (?:feet|ft)\\b',
      ],
    },
    {
      id: 'balance_strength',
      label: 'Balance, strength or standardized measure',
      prompt: 'Which objective measure (MMT, ROM, Berg, TUG, Tinetti, 30-second chair stand) changed today?',
      cues: ['\\bbalance\\b', '\\bstrength\\b', '\\bmmt\\b', '\\brom\\b', '\\brange of motion\\b', '\\bberg\\b', '\\btug\\b', '\\btimed up and go\\b', '\\btinetti\\b', '\\bchair stands?\\b'],
    },
    c.response,
    c.goalProgress,
    c.pain,
    c.vitals,
    c.safety,
    c.medicationReview,
    c.education,
    c.planFrequency,
  ],
};
