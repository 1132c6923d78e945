import { digitsFromWords } from './number-words.ts';

/**
 * Vital signs read from note sentences. Values are numbers in the units clinicians dictate
 * in US home health (mmHg, beats and breaths per minute, %, °F unless said in Celsius, lb
 * unless said in kg, mg/dL); a value outside a physiological range is not a reading and is
 * not extracted.
 */
export interface VitalSigns {
  blood_pressure?: string; // "132/80"
  heart_rate?: number;
  respiratory_rate?: number;
  oxygen_saturation?: number;
  temperature?: number;
  pain?: number; // 0–10
  weight?: number;
  blood_glucose?: number;
}

export type VitalName = keyof VitalSigns;

const GAP = '[^0-9.]{0,24}?';

interface Rule {
  readonly name: VitalName;
  readonly re: RegExp;
  readonly read: (m: RegExpExecArray) => number | string | null;
}

const inRange = (v: number, lo: number, hi: number) => (v >= lo && v <= hi ? v : null);

const RULES: readonly Rule[] = [
  {
    name: 'blood_pressure',
    re: new RegExp(`\\b(?:bp|b\\.p\\.|blood pressures?)\\b${GAP}(\\d{2,3})\\s*(?:/|over)\\s*(\\d{2,3})\\b`, 'i'),
    read: (m) => bp(m[1]!, m[2]!),
  },
  {
    name: 'blood_pressure',
    re: new RegExp(`\\bvitals?(?: signs)?\\b${GAP}(\\d{2,3})\\s*/\\s*(\\d{2,3})\\b`, 'i'),
    read: (m) => bp(m[1]!, m[2]!),
  },
  {
    // an unlabelled "142 over 88" is a blood pressure: nothing else is dictated that way
    name: 'blood_pressure',
    re: /\b(\d{2,3})\s+over\s+(\d{2,3})\b/i,
    read: (m) => bp(m[1]!, m[2]!),
  },
  {
    name: 'heart_rate',
    re: new RegExp(`\\b(?:hr|heart rate|pulse(?: rate)?|apical(?: pulse)?|radial pulse)\\b${GAP}(\\d{2,3})\\b(?!\\s*(?:%|percent))`, 'i'),
    read: (m) => inRange(Number(m[1]), 25, 250),
  },
  {
    name: 'respiratory_rate',
    re: new RegExp(`\\b(?:rr|resp(?:s|irations?|iratory rate)?|respiratory rate|breaths per minute)\\b${GAP}(\\d{1,2})\\b`, 'i'),
    read: (m) => inRange(Number(m[1]), 4, 60),
  },
  {
    name: 'oxygen_saturation',
    re: new RegExp(
      `\\b(?:sp ?o2|o2 sat(?:uration)?s?|oxygen sat(?:uration)?s?|oxygen (?:level|saturation)|sat(?:s|uration)?|pulse ox(?:imetry)?|satting|saturating|o2)\\b${GAP}(\\d{2,3})\\b`,
      'i',
    ),
    read: (m) => inRange(Number(m[1]), 50, 100),
  },
  {
    name: 'temperature',
    re: new RegExp(`\\b(?:temp(?:erature)?|t)\\b${GAP}(\\d{2,3}(?:\\.\\d{1,2})?)\\s*(c|celsius|f|fahrenheit|degrees)?`, 'i'),
    read: (m) => {
      const v = Number(m[1]);
      return /^c/i.test(m[2] ?? '') ? inRange(v, 30, 43) : inRange(v, 86, 110) ?? inRange(v, 34, 42.5);
    },
  },
  {
    name: 'pain',
    re: new RegExp(`\\bpain\\b[^0-9.]{0,40}?(\\d{1,2})\\s*(?:/|out of|over)\\s*10\\b`, 'i'),
    read: (m) => inRange(Number(m[1]), 0, 10),
  },
  {
    name: 'pain',
    re: /\b(\d{1,2})\s*(?:\/|out of|over)\s*10\b[^.]{0,30}?\bpain\b/i,
    read: (m) => inRange(Number(m[1]), 0, 10),
  },
  {
    name: 'pain',
    re: /\bpain\s+(?:level|score|rating|rated|is|was|at|of)\s+(?:a |at |of |an? )?(?:level )?(\d{1,2})\b(?!\s*(?:days?|weeks?|months?|years?|times?|feet|ft|min))/i,
    read: (m) => inRange(Number(m[1]), 0, 10),
  },
  {
    name: 'pain',
    re: /\b(?:rates?|rated|rating)\s+(?:her |his |their |the )?pain\s+(?:as |at |a |an )*(\d{1,2})\b/i,
    read: (m) => inRange(Number(m[1]), 0, 10),
  },
  {
    name: 'pain',
    re: /\b(?:sore|hurts?|hurting|aching|achy)\b[^0-9.]{0,30}?(\d{1,2})\s*(?:\/|out of)\s*10\b/i,
    read: (m) => inRange(Number(m[1]), 0, 10),
  },
  {
    name: 'weight',
    re: new RegExp(`\\b(?:weight|weighs|weighed|wt)\\b${GAP}(\\d{2,3}(?:\\.\\d)?)\\s*(lbs?|pounds|kg|kilos?|kilograms)?`, 'i'),
    read: (m) => {
      const v = Number(m[1]);
      return /^k/i.test(m[2] ?? '') ? inRange(v, 20, 250) : inRange(v, 50, 600);
    },
  },
  {
    name: 'blood_glucose',
    re: new RegExp(
      `\\b(?:blood (?:sugar|glucose)s?|glucose|sugars?|fsbs|cbg|bg|finger ?stick|accu-? ?che(?:ck|k)s?)\\b${GAP}(\\d{2,3})\\b`,
      'i',
    ),
    read: (m) => inRange(Number(m[1]), 20, 600),
  },
];

function bp(sys: string, dia: string): string | null {
  const s = Number(sys);
  const d = Number(dia);
  return s >= 60 && s <= 260 && d >= 30 && d <= 160 && s > d ? `${s}/${d}` : null;
}

/**
 * Reads vital signs from the sentences of a note, the first reading of each kind winning
 * (a repeat, e.g. a standing blood pressure, is left for the clinician's text).
 */
export function extractVitals(sentences: readonly string[]): VitalSigns {
  const out: VitalSigns = {};
  for (const raw of sentences) readVitals(raw, out);
  return out;
}

/** Adds the readings of one sentence to `into`, for the kinds it does not hold yet. */
export function readVitals(sentence: string, into: VitalSigns): void {
  const out = into as Record<string, number | string>;
  // "%" and "percent" kept, number words as digits, commas between a label and its value dropped
  const text = digitsFromWords(sentence).replace(/(\d),(?=\s*\d)/g, '$1 ');
  for (const rule of RULES) {
    if (out[rule.name] !== undefined) continue;
    const m = rule.re.exec(text);
    if (!m) continue;
    const v = rule.read(m);
    if (v !== null) out[rule.name] = v;
  }
}

/** Abnormal readings a clinician must check before signing (adult home-health thresholds). */
export function abnormalVitals(v: VitalSigns): string[] {
  const flags: string[] = [];
  if (v.blood_pressure) {
    const [s, d] = v.blood_pressure.split('/').map(Number) as [number, number];
    if (s >= 160 || d >= 100) flags.push(`Abnormal vital sign: blood pressure ${v.blood_pressure} is high`);
    else if (s < 90 || d < 50) flags.push(`Abnormal vital sign: blood pressure ${v.blood_pressure} is low`);
  }
  if (v.heart_rate !== undefined && (v.heart_rate > 110 || v.heart_rate < 50)) flags.push(`Abnormal vital sign: heart rate ${v.heart_rate}`);
  if (v.respiratory_rate !== undefined && (v.respiratory_rate > 24 || v.respiratory_rate < 10)) flags.push(`Abnormal vital sign: respiratory rate ${v.respiratory_rate}`);
  if (v.oxygen_saturation !== undefined && v.oxygen_saturation < 90) flags.push(`Abnormal vital sign: oxygen saturation ${v.oxygen_saturation}%`);
  if (v.temperature !== undefined && (v.temperature > 50 ? v.temperature >= 100.4 || v.temperature < 95 : v.temperature >= 38 || v.temperature < 35)) {
    flags.push(`Abnormal vital sign: temperature ${v.temperature}`);
  }
  if (v.pain !== undefined && v.pain >= 7) flags.push(`Abnormal vital sign: pain ${v.pain}/10`);
  if (v.blood_glucose !== undefined && (v.blood_glucose > 250 || v.blood_glucose < 70)) flags.push(`Abnormal vital sign: blood glucose ${v.blood_glucose}`);
  return flags;
}
