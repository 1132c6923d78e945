/**
 * Documentation checklists per discipline and the matcher that checks a transcript against
 * them. Pure (no I/O, no clock) so the server and, later, the offline client run the same
 * match on the same data.
 */
import { otChecklist } from './data/ot.ts';
import { ptChecklist } from './data/pt.ts';
import { rnChecklist } from './data/rn.ts';
import { slpChecklist } from './data/slp.ts';
import type { Checklist } from './types.ts';

export * from './types.ts';
export { matchChecklist, suggestionsFor } from './matcher.ts';

const byCode: Readonly<Record<string, Checklist>> = {
  PT: ptChecklist,
  PTA: ptChecklist,
  OT: otChecklist,
  COTA: otChecklist,
  SLP: slpChecklist,
  ST: slpChecklist,
  RN: rnChecklist,
  LPN: rnChecklist,
  LVN: rnChecklist,
};

/** The discipline codes that have a checklist (assistants share their discipline's). */
export const CHECKLIST_DISCIPLINES: readonly string[] = Object.keys(byCode);

/** The checklist of a discipline code, case-insensitive; null for an unknown code. */
export function checklistFor(discipline: string): Checklist | null {
  return byCode[discipline.trim().toUpperCase()] ?? null;
}
