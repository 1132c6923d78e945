import type { Checklist } from '../types.ts';
import * as c from './common.ts';

/** Speech-language pathology. */
export const slpChecklist: Checklist = {
  discipline: 'SLP',
  version: '2026.11.1',
  items: [
    c.homebound,
    c.skilledNeed,
    c.interventionMinutes,
    {
      id: 'swallow_diet',
      label: 'Swallowing and diet level',
      prompt: 'What swallow function and diet/liquid consistency were addressed, with signs of aspiration?',
      cues: ['\\bswallow', '\\bdysphagia\\b', '\\bdiet\\b', '\\bliquids?\\b', '\\bnectar\\b', '\\bhoney\\b', '\\bpuree', '\\bmechanical soft\\b', '\\baspiration\\b', '\\bcough(?:ing)?\\b', '\\bpo trials?\\b', '\\bchin tuck\\b'],
    },
    {
      id: 'communication_cognition',
      label: 'Communication or cognition with cueing and accuracy',
      prompt: 'Which speech, language or cognitive tasks were done, with accuracy and level of cueing?',
      cues: ['\\bspeech\\b', '\\blanguage\\b', '\\bword[- ]finding\\b', '\\bnaming\\b', '\\baphasia\\b', '\\bdysarthria\\b', '\\bintelligib', '\\bmemory\\b', '\\brecall\\b', '\\bcognit', '\\baccuracy\\b', '\\b(?:\\d+|[a-z]+) ?(?:%|percent)', '\\bcues?\\b', '\\bcueing\\b'],
    },
    c.response,
    c.goalProgress,
    c.safety,
    c.vitals,
    c.medicationReview,
    c.education,
    c.planFrequency,
  ],
};
