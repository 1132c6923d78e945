/**
 * The checklist endpoints' rules. Stateless: the transcript is the caller's own text and
 * is neither stored nor logged, so nothing here touches the database or the audit log.
 */
import { checklistFor, matchChecklist, suggestionsFor, type Checklist } from '@fieldchart/schema/checklists';
import { Invalid, NotFound } from '../../../errors.ts';

function known(discipline: string): Checklist | null {
  return checklistFor(discipline);
}

function forBody(discipline: string): Checklist {
  const c = known(discipline);
  if (!c) throw Invalid.field('discipline', 'must be a discipline with a checklist (PT, PTA, OT, COTA, SLP, RN)', 'unknown_discipline');
  return c;
}

export function createAiChecklists() {
  return {
    /** The items of a discipline's checklist; 404 for an unknown discipline. */
    items(discipline: string) {
      const c = known(discipline);
      if (!c) throw new NotFound('Unknown discipline', 'discipline_not_found');
      return c.items.map(({ id, label, prompt }) => ({ id, label, prompt }));
    },
    match(input: { transcript: string; discipline: string }) {
      const c = forBody(input.discipline);
      return { discipline: c.discipline, version: c.version, matched_items: matchChecklist(c, input.transcript) };
    },
    suggestions(input: { transcript: string; discipline: string; checked_items: readonly string[] }) {
      const c = forBody(input.discipline);
      return { suggestions: suggestionsFor(c, input.transcript, input.checked_items) };
    },
  };
}

export type AiChecklists = ReturnType<typeof createAiChecklists>;
