import type { Checklist } from '../types.ts';
import * as c from './common.ts';

/** Occupational therapy (also used by COTA visits). */
export const otChecklist: Checklist = {
  discipline: 'OT',
  version: '2026.11.1',
  items: [
    c.homebound,
    c.skilledNeed,
    c.interventionMinutes,
    {
      id: 'adl_performance',
      label: 'ADL performance with assist level',
      prompt: 'Which ADLs (dressing, bathing, grooming, toileting, feeding) were addressed, and at what assist level?',
      cues: ['\\badls?\\b', '\\bdressing\\b', '\\bbathing\\b', '\\bshower', '\\bgrooming\\b', '\\btoilet(?:ing)?\\b', '\\bfeeding\\b', '\\bself[- ]care\\b', '\\biadls?\\b', '\\bmeal prep'],
    },
    {
      id: 'adaptive_equipment',
      label: 'Adaptive equipment and home modification',
      prompt: 'Was adaptive equipment issued or trained (reacher, sock aid, tub bench, raised toilet seat)?',
      cues: ['\\badaptive\\b', '\\breacher\\b', '\\bsock aid\\b', '\\btub (?:transfer )?bench\\b', '\\bshower chair\\b', '\\braised toilet seat\\b', '\\bgrab bars?\\b', '\\blong[- ]handled\\b', '\\bdme\\b', '\\bequipment\\b'],
    },
    {
      id: 'ue_function',
      label: 'Upper-extremity function or cognition',
      prompt: 'What upper-extremity strength, coordination or cognition findings were measured?',
      cues: ['\\bue\\b', '\\bupper extremit', '\\bgrip\\b', '\\bfine motor\\b', '\\bcoordination\\b', '\\bcognit', '\\bsequenc', '\\bshoulder\\b', '\\brom\\b', '\\bstrength\\b'],
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
