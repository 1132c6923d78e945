/**
 * The demo caseload: fictional patients placed at the street addresses of public landmarks
 * in Columbus, Ohio (so no private residence is implied), with the diagnoses, referral
 * sources and ordered frequencies of a typical home-health physical-therapy caseload.
 */

export const DEMO_EMAIL = 'demo.clinician@fieldchart.example';
/** Printed by `fieldchart seed --demo`; a demo account, not a secret. */
export const DEMO_PASSWORD = 'Fieldchart-demo-2026';
export const DEMO_TIME_ZONE = 'America/New_York';

export interface DemoPatient {
  readonly first: string;
  readonly last: string;
  readonly phone: string;
  readonly address: string;
  readonly lat: number;
  readonly lng: number;
  readonly diagnosis: readonly string[];
  readonly frequency: string;
  readonly source: string;
  /** Weekdays (1 = Monday … 5 = Friday) the patient is seen. */
  readonly days: readonly number[];
}

export const DEMO_PATIENTS: readonly DemoPatient[] = [
  { first: 'Margaret', last: 'Kowalski', phone: '614-555-0101', address: '1 Capitol Square, Columbus, OH 43215', lat: 39.9612, lng: -82.9988, diagnosis: ['Z96.651', 'M17.11', 'Z47.1'], frequency: '3w2, 2w2', source: 'OhioHealth Riverside Methodist Hospital', days: [1, 3, 5] },
  { first: 'Harold', last: 'Jenkins', phone: '614-555-0102', address: '333 W Broad St, Columbus, OH 43215', lat: 39.9593, lng: -83.007, diagnosis: ['I69.351', 'R26.81', 'I10'], frequency: '3w4', source: 'OSU Wexner Medical Center', days: [1, 3, 5] },
  { first: 'Dolores', last: 'Reyes', phone: '614-555-0103', address: '480 E Broad St, Columbus, OH 43215', lat: 39.9642, lng: -82.9877, diagnosis: ['S72.001D', 'Z96.641', 'M81.0'], frequency: '2w4', source: 'Mount Carmel East', days: [2, 4] },
  { first: 'Walter', last: 'Nguyen', phone: '614-555-0104', address: '1777 E Broad St, Columbus, OH 43203', lat: 39.9652, lng: -82.9548, diagnosis: ['I50.32', 'M62.81', 'R53.1'], frequency: '2w3', source: 'Dr. A. Patel, primary care', days: [2, 4] },
  { first: 'Eleanor', last: 'Fitzgerald', phone: '614-555-0105', address: '96 S Grant Ave, Columbus, OH 43215', lat: 39.9607, lng: -82.9905, diagnosis: ['G20.A1', 'R29.6', 'Z91.81'], frequency: '2w4', source: 'OhioHealth Neurological Physicians', days: [1, 4] },
  { first: 'Frank', last: 'Oduya', phone: '614-555-0106', address: '59 Spruce St, Columbus, OH 43215', lat: 39.9722, lng: -83.0046, diagnosis: ['J44.1', 'R06.02', 'M62.81'], frequency: '2w3', source: 'Grant Medical Center', days: [2, 5] },
  { first: 'Ruth', last: 'Schneider', phone: '614-555-0107', address: '588 S Third St, Columbus, OH 43215', lat: 39.9506, lng: -82.9962, diagnosis: ['M48.062', 'M54.50', 'R26.2'], frequency: '2w4', source: 'Dr. L. Moreno, orthopedics', days: [1, 3] },
  { first: 'George', last: 'Abernathy', phone: '614-555-0108', address: '1069 Jaeger St, Columbus, OH 43206', lat: 39.944, lng: -82.9885, diagnosis: ['E11.42', 'R26.81', 'Z89.421'], frequency: '2w4', source: 'Mount Carmel Grove City', days: [3, 5] },
  { first: 'Irene', last: 'Castillo', phone: '614-555-0109', address: '800 E 17th Ave, Columbus, OH 43211', lat: 40.0033, lng: -82.9876, diagnosis: ['Z96.652', 'M17.12', 'Z47.1'], frequency: '3w2, 2w2', source: 'OSU East Hospital', days: [2, 4] },
  { first: 'Stanley', last: 'Brooks', phone: '614-555-0110', address: '2411 E Main St, Bexley, OH 43209', lat: 39.955, lng: -82.933, diagnosis: ['M80.08XD', 'R29.6', 'M62.81'], frequency: '1w4', source: 'Dr. K. Osei, geriatrics', days: [5] },
  { first: 'Betty', last: 'Lindqvist', phone: '614-555-0111', address: '3600 Tremont Rd, Upper Arlington, OH 43221', lat: 40.0236, lng: -83.0644, diagnosis: ['I63.512', 'I69.354', 'R47.01'], frequency: '3w4', source: 'OSU Wexner Medical Center', days: [1, 3, 5] },
  { first: 'Raymond', last: 'Okafor', phone: '614-555-0112', address: '50 W New England Ave, Worthington, OH 43085', lat: 40.0931, lng: -83.0182, diagnosis: ['M16.11', 'M25.551', 'R26.89'], frequency: '2w4', source: 'Dr. J. Whitaker, orthopedics', days: [2, 4] },
];

/** Start times of a working day, in order; a day's visits take the first slots. */
export const DAY_SLOTS = ['08:30', '09:45', '11:00', '13:00', '14:15', '15:30'] as const;

export const SUBJECTIVE = [
  'Patient reports pain 4/10 with stairs, improved from last visit. Slept well; no falls since last visit.',
  'Reports feeling more confident walking to the mailbox. Mild stiffness in the morning, resolves after 20 minutes.',
  'Caregiver reports patient has been doing home exercises once daily. Patient denies dizziness or shortness of breath.',
  'Patient states fatigue after showering; otherwise tolerating activity. Pain 3/10 at rest, 5/10 with transfers.',
];
export const OBJECTIVE = [
  'Ambulated 150 ft with rolling walker, contact guard assist, 2 standing rests. Sit-to-stand x10 with bilateral UE support. Knee flexion AROM 0–98°.',
  'Timed Up and Go 16.2 s with single-point cane. Gait: decreased step length on the involved side, no loss of balance. Stair negotiation 4 steps with rail, step-to pattern.',
  'Berg Balance 44/56. Tandem stance 8 s. Bed mobility independent; supine-to-sit with verbal cues for log roll.',
  'Therapeutic exercise: heel slides, quad sets, SAQ 2x15; standing hip abduction 2x10 with rail. SpO2 stable with activity.',
];
export const ASSESSMENT = [
  'Progressing toward goals; gait endurance and transfer safety improving. Remains at moderate fall risk.',
  'Steady gains in ROM and strength; requires continued skilled PT for gait training and balance.',
  'Tolerated session well. Balance deficits persist but improving; home exercise program adherence good.',
];
export const PLAN = [
  'Continue plan of care per ordered frequency. Progress to cane on level surfaces; update home exercise program.',
  'Continue gait and balance training; add stair training next visit. Reinforce fall-prevention strategies with caregiver.',
  'Continue therapeutic exercise and transfer training. Reassess goals at next visit; coordinate with RN about BP readings.',
];

/** A 1×1 PNG: the demo notes are signed with a placeholder image. */
export const DEMO_SIGNATURE =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

/** Deterministic pseudo-random numbers (mulberry32): a rerun plans the same visits. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
