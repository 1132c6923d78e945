/**
 * Sorts a cleaned clause into a SOAP section. A weighted-cue scorer: each section has cues
 * (what the patient or caregiver says → subjective; measurements, interventions, findings →
 * objective; clinical judgement, tolerance, progress, skilled need, homebound reasons →
 * assessment; what comes next → plan), the clause's opening counts more than its middle, and
 * each discipline adds its own vocabulary. Pure: no I/O.
 */
import { SOAP_SECTIONS, type SoapSection } from '@fieldchart/schema/rules';
import { digitsFromWords } from './number-words.ts';

/** A SOAP section (the shared list, so the generator names sections as drafts and notes do). */
export type Section = SoapSection;

interface Cue {
  readonly re: RegExp;
  readonly w: number;
}

const cue = (re: RegExp, w: number): Cue => ({ re, w });

const SUBJ = '(?:the patient|patient|pt|she|he|they|client|resident|patient\'s|pt\'s)';
const FAMILY = '(?:(?:her|his|the|patient\'?s?|their)\\s+)?(?:caregiver|daughter|son|wife|husband|spouse|mother|father|aide|family|granddaughter|grandson|niece|nephew|sister|brother|daughter-in-law|son-in-law|significant other|partner|friend|neighbor)';
const SPEECH = '(?:reports?|reported|reporting|states?|stated|stating|says|said|denies|denied|complains?|complained|c/o|mentions?|mentioned|tells|told|feels|felt|notes that|expresses|expressed|describes?|admits|endorses?|voices|voiced|rates?|rated|thinks|believes|is concerned|was concerned|is worried|worries|asked|asks|wants|would like|hopes)';

const SECTION_CUES: Record<Section, readonly Cue[]> = {
  subjective: [
    cue(new RegExp(`^${SUBJ} ${SPEECH}\\b`), 5),
    cue(new RegExp(`^${FAMILY} ${SPEECH}\\b`), 5),
    cue(new RegExp(`^${FAMILY}\\b`), 1),
    cue(/\b(?:reports?|reported|states?|stated|denies|denied|complains?|c\/o|per (?:patient|pt|caregiver|daughter|son|wife|husband|family|spouse|report))\b/, 2.5),
    cue(/\b(?:says|said|tells me|told me|according to)\b/, 2),
    cue(/\b(?:feels|felt|feeling)\b/, 1),
    cue(/\bpain\b/, 1.2),
    cue(/\b(?:slept|sleeping|sleep|appetite|dizzy|dizziness|tired|nauseous|nausea|worried|anxious|fell|had a fall|no falls|goal is to|wants to|would like to|hopes to|hurts?|sore(?:ness)?|aching|achy|stiff(?:ness)?|ate|eating|drinking)\b/, 1.3),
    cue(/^(?:no (?:new )?(?:complaints|falls|pain|changes|concerns)|denies)\b/, 3),
  ],
  objective: [
    cue(/\b(?:bp|blood pressure|heart rate|hr|pulse|sp ?o2|o2 sats?|sats?|oxygen saturation|satting|temp|temperature|respirations|resp rate|rr|weighs|weight|blood sugar|blood glucose|fsbs|cbg|vitals?|vital signs)\b/, 1),
    cue(/\b(?:bp|blood pressure|heart rate|hr|pulse|sp ?o2|o2 sats?|sats?|oxygen saturation|satting|temp|temperature|respirations|resp rate|rr|weighs|weight|blood sugar|blood glucose|fsbs|cbg|vitals?|vital signs)\b(?: [a-z]+){0,3} \d/, 2),
    cue(/\b\d+(?:\.\d+)?\s*(?:feet|ft|foot|reps|repetitions|sets|seconds|sec|cm|%|percent|degrees|x|times|steps|stairs|meters|m|lbs?|pounds|kg)\b/, 1.5),
    cue(/\bx ?\d+\b/, 1),
    cue(/\b(?:ambulat\w*|gait|transfer\w*|sit to stand|sit-to-stand|stand pivot|bed mobility|supine|ther ?ex|therex|therapeutic|exercises?|performed|completed|instructed|educated|education|trained|training|demonstrated|return demonstrat\w*|verbalized understanding|reviewed|observed|assessed|revealed|exam|noted|worked on|practiced|issued|provided|applied|administered)\b/, 1.5),
    cue(/\b(?:min(?:imal)? ?(?:assist|a)|mod(?:erate)? ?(?:assist|a)|max(?:imal)? ?(?:assist|a)|cga|sba|contact guard|stand ?by assist|independent(?:ly)?|supervision|mod i|modified independent|setup|set up|verbal cues|tactile cues)\b/, 1.5),
    cue(/\b(?:rolling walker|rw|fww|front wheeled walker|cane|quad cane|wheelchair|w\/c|walker|rollator|stairs|steps|handrail|rom|mmt|\d\/5|berg|tug|tinetti|manual therapy|e-?stim|ultrasound|hep|home exercise program)\b/, 1),
    cue(/\b(?:wound|dressing|drainage|incision|lungs?|breath sounds|crackles|rales|wheez\w*|diminished|edema|pitting|skin|bowel sounds|abdomen|alert and oriented|a ?& ?o|a and o|oriented|afebrile|capillary refill|pedal pulses|site|foley|catheter|insulin|injection|flushed|picc|ostomy|stoma)\b/, 1.2),
    cue(/\b(?:swallow\w*|po trials|trials?|liquids|thin|nectar|honey|puree\w*|mechanical soft|diet|cues?|cueing|accuracy|naming|word finding|repetition|intelligib\w*|oral motor|chin tuck|mastication|bolus|oral residue|recall)\b/, 1.2),
    cue(/\b(?:adls?|dressing|grooming|toileting|bathing|shower|tub|hygiene|feeding|ue|le|upper extremit\w*|lower extremit\w*|grip|pinch|fine motor|coordination|reacher|sock aid|long handled|sponge|tub bench|shower chair|raised toilet seat|bedside commode|bsc)\b/, 1),
    cue(/\b(?:medications? (?:were |was )?(?:reviewed|reconciled)|med rec|medication reconciliation|reconcil\w*|pill ?box|pill organizer)\b/, 2),
    cue(/^(?:vitals?|bp|blood pressure|heart rate|hr|pulse|sats|spo2|temp|weight|observed|performed|completed|ambulated|gait|transfers?|ther ?ex|therex|lungs|skin|wound|educated|instructed|reviewed|patient ambulated|pt ambulated)\b/, 1.5),
  ],
  assessment: [
    cue(/^(?:assessment|overall|impression|a:)\b/, 5),
    cue(/\b(?:progress(?:ing|ed|es)?|improv(?:ed|ing|ement|es)|declin(?:ed|ing)|regress\w*|plateau\w*|on track|is healing|healing well)\b/, 3),
    cue(/\b(?:tolerat\w*|responded|responding|response to|limited by|limiting|limits|limitations?|secondary to|due to|tends to (?:fatigue|tire)|fatigues)\b/, 2.2),
    cue(/\b(?:appears?|likely|suggest\w*|indicat\w*|consistent with|(?<!\bno |\bwithout |\d |\bten |\bzero )signs of|possible|probable|concerning for|at risk|high risk|fall risk|risk (?:for|of)|deficits?|impair(?:ed|ment)s?|weakness)\b/, 2.2),
    cue(/\b(?:unsafe|not safe|safe (?:for|with|to)|safer|safely)\b/, 2.5),
    cue(/\b(?:requires? skilled|needs? skilled|skilled (?:pt|ot|slp|st|nursing|therapy|services|instruction|intervention|need)|would benefit|benefits? from|needs? (?:reinforcement|more (?:teaching|education|training|practice)|continued|further|additional)|continues? to (?:need|require|demonstrate|have)|is needed|are needed)\b/, 4),
    cue(/\b(?:homebound|taxing effort)\b/, 4),
    cue(/\b(?:goals?\b.*\b(?:met|meeting|achieved)|(?:met|meeting|meets|achieved|toward|towards)\b.*\bgoals?|stg|ltg)\b/, 2.5),
    cue(/\b(?:(?:good|fair|poor|significant|steady|slow) (?:tolerance|understanding|carryover|safety awareness|balance|endurance|prognosis|progress|insight|recall|improvement)|decreased (?:endurance|balance|strength|safety|activity tolerance)|stable|well controlled|poorly controlled|prognosis|rehab potential|demonstrates? (?:improved|increased|decreased|good|fair|poor|impaired))\b/, 2.2),
    cue(/^(?:improved|improving|increased|decreased|limited|significant|good|fair|poor|progressing)\b/, 2),
    cue(/^(?:patient|pt|she|he) (?:is|was|remains|continues|has been) (?:progressing|improving|making|limited|at risk|homebound|a fall risk|unsafe|safe|appropriate|stable)\b/, 2.5),
  ],
  plan: [
    cue(/^(?:plan|poc|p:|next visit|next session|next week|recommend(?:s|ing)?|follow up|f\/u)\b/, 5),
    cue(/^(?:will|continue|we will|we'll|i will|i'll|going to|plan to|to continue|recommend)\b/, 3),
    cue(/\b(?:plan(?:s|ned)? (?:is|to|for)|plan of care|poc|will (?:continue|progress|follow|see|return|call|notify|monitor|address|focus|work|add|increase|decrease|update|schedule|reassess|re-?eval\w*|discharge|recheck|contact|initiate|begin|start|trial|advance|upgrade|downgrade|review|check|send|order|request|coordinate|teach|instruct|educate|practice|introduce|assess|have|need|be|perform|visit|complete|reinforce|obtain|fax|report)|continue (?:with|to|pt|ot|st|slp|skilled|plan|poc|current|hep|per|therapy|nursing|visits|plan of care|diet|home)|next (?:visit|session|week|time)|\d\s*(?:x|times)\s*(?:a |per |\/)?(?:week|wk|w)\b|\d+w\d+|frequency|recert\w*|discharge (?:planning|next|when|once|from|to|plan)|anticipate\w*|recommend(?:s|ing|ations?)?|follow[- ]?up|f\/u|return visit|scheduled? (?:for|next)|going forward|we'll|we will|going to|upcoming|refer(?:ral|red)? to|notif(?:y|ied) (?:md|physician|doctor|pcp)|(?:md|physician|doctor|pcp) (?:notified|aware|called)|call(?:ed)? (?:the )?(?:md|physician|doctor|pcp|office))\b/, 3),
  ],
};

/** Extra vocabulary per discipline (PTA and COTA use their discipline's). */
const DISCIPLINE_CUES: Record<string, Partial<Record<Section, readonly Cue[]>>> = {
  PT: {
    objective: [cue(/\b(?:gait|ambulat\w*|step length|cadence|stance|heel strike|weight shift\w*|balance|single leg stance|squats?|bridges?|clamshells?|heel raises|marching|quad sets|slr|straight leg raises?|hip abduction|knee extension|lap|laps)\b/, 1)],
    assessment: [cue(/\b(?:gait deviation\w*|antalgic|shuffling|trendelenburg|loss of balance|lob|guarding)\b/, 0.8)],
  },
  OT: {
    objective: [cue(/\b(?:lb dressing|ub dressing|lower body dressing|upper body dressing|don(?:ned|ning)?|doff(?:ed|ing)?|buttons?|zippers?|shoes|socks|toilet transfers?|tub transfers?|shower transfers?|meal prep|kitchen|energy conservation|theraputty|putty|pegs?|pegboard)\b/, 1.2)],
  },
  SLP: {
    objective: [cue(/\b(?:trials of|ice chips|applesauce|cup sips|straw sips|teaspoon|sips|bites|vocal|voice|phonation|articulation|sentence completion|confrontation naming|memory tasks|orientation questions|word retrieval|picture description|srt|spaced retrieval|oral motor exercises|effortful swallow|mendelsohn|masako|shaker)\b/, 1.2)],
    assessment: [cue(/\b(?:aspiration|penetration|delayed swallow|delayed initiation|pocketing|wet vocal quality|signs of aspiration|safe for|functional communication)\b/, 1)],
  },
  RN: {
    objective: [cue(/\b(?:assessed|auscultated|palpated|measured|measures|dressing changed|wound bed|granulation|slough|periwound|staples|sutures|drawn|lab|labs|venipuncture|inr|fingerstick|glucometer|sliding scale|inhaler|nebulizer|oxygen|nasal cannula|liters|l\/min)\b/, 1.2)],
    plan: [cue(/\b(?:notify md|call md|report to|sn (?:to|will)|skilled nursing (?:to|will)|next sn visit|rn to)\b/, 2)],
  },
};

const ALIASES: Record<string, string> = { PTA: 'PT', COTA: 'OT', ST: 'SLP', LPN: 'RN', LVN: 'RN' };

export function disciplineKey(discipline: string): string {
  const d = discipline.trim().toUpperCase();
  return ALIASES[d] ?? d;
}

export interface Classification {
  readonly section: Section;
  /** 0..1: how clearly the winning section beat the others */
  readonly confidence: number;
  readonly scores: Readonly<Record<Section, number>>;
}

const SECTIONS: readonly Section[] = SOAP_SECTIONS;

export function classifyClause(text: string, discipline: string): Classification {
  const t = digitsFromWords(text.toLowerCase()).replace(/[.!?]+$/, '');
  const extra = DISCIPLINE_CUES[disciplineKey(discipline)] ?? {};
  const scores: Record<Section, number> = { subjective: 0, objective: 0, assessment: 0, plan: 0 };
  for (const s of SECTIONS) {
    for (const c of [...SECTION_CUES[s], ...(extra[s] ?? [])]) if (c.re.test(t)) scores[s] += c.w;
  }
  const ranked = [...SECTIONS].sort((a, b) => scores[b] - scores[a]);
  const top = ranked[0]!;
  const second = ranked[1]!;
  // nothing recognised: an observation by the clinician is the likeliest reading
  if (scores[top] === 0) return { section: 'objective', confidence: 0.4, scores };
  const margin = (scores[top] - scores[second]) / scores[top];
  return { section: top, confidence: Math.min(0.98, 0.5 + margin / 2), scores };
}
