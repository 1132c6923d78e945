import type { Checklist } from '../types.ts';
import * as c from './common.ts';

/** Skilled nursing. */
export const rnChecklist: Checklist = {
  discipline: 'RN',
  version: '2026.11.1',
  items: [
    c.homebound,
    c.skilledNeed,
    c.vitals,
    {
      id: 'systems_assessment',
      label: 'Cardiopulmonary and systems assessment',
      prompt: 'What did the head-to-toe assessment find (lung sounds, edema, heart rhythm, bowel and bladder)?',
      cues: ['\\blungs?\\b', '\\bbreath sounds\\b', '\\bcrackles\\b', '\\bwheez', '\\bclear\\b', '\\bedema\\b', '\\bpitting\\b', '\\bheart (?:sounds|rhythm)\\b', '\\bbowel', '\\bbladder\\b', '\\burin', '\\bassessment\\b', '\\bwnl\\b'],
    },
    {
      id: 'skin_wound',
      label: 'Skin and wound care',
      prompt: 'What was the skin and wound status (measurements, drainage, dressing change)?',
      cues: ['\\bwound\\b', '\\bskin\\b', '\\bdressing\\b', '\\bdrainage\\b', '\\bincision\\b', '\\bulcer\\b', '\\bpressure (?:injury|sore)\\b', '\\bredness\\b', '\\b(?:cm|centimeters?)\\b'],
    },
    c.medicationReview,
    {
      id: 'disease_management',
      label: 'Disease management (glucose, weight, symptoms)',
      prompt: 'Which disease indicators were checked (blood glucose, daily weight, symptoms of exacerbation)?',
      cues: ['\\bblood (?:sugar|glucose)\\b', '\\bglucose\\b', '\\bfsbs\\b', '\\bcbg\\b', '\\binsulin\\b', '\\bweigh(?:t|s|ed)\\b', '\\bchf\\b', '\\bcopd\\b', '\\bdiabet', '\\bsymptoms?\\b'],
    },
    c.pain,
    c.response,
    c.goalProgress,
    c.safety,
    c.education,
    {
      id: 'physician_coordination',
      label: 'Physician and care coordination',
      prompt: 'Was the physician or another discipline notified of findings or changes?',
      cues: ['\\b(?:md|physician|doctor|pcp|provider)\\b', '\\bnotif(?:ied|y)\\b', '\\bcoordinat', '\\bcalled\\b'],
    },
    c.planFrequency,
  ],
};
