/**
 * A visit note against its discipline's documentation checklist, on the device: the same
 * checklists and the same matcher as the server's `POST /ai/match-checklist` and the AI
 * note's `not_mentioned` (`@fieldchart/schema/checklists`, pure and shipped inside the
 * package), so a clinician with no signal sees what is missing before signing.
 */
import { checklistFor, matchChecklist, type ChecklistMatch } from '@fieldchart/schema/checklists';
import type { SoapSection } from '../sync/drafts.ts';

export type ChecklistItemView = { readonly id: string; readonly label: string; readonly prompt: string };

export interface VisitChecklist {
  /** The checklist's discipline (PTA and COTA resolve to PT and OT). */
  readonly discipline: string;
  /** The checklist's version, as the server's match answers it. */
  readonly version: string;
  /** What was matched: the device's draft of the note, the note as submitted, or nothing yet. */
  readonly source: 'draft' | 'note' | 'none';
  /** Per item id, in checklist order: the server's `matched_items` shape. */
  readonly matched_items: Readonly<Record<string, ChecklistMatch>>;
  /** The items the note does not show yet, in checklist order, with the question to ask. */
  readonly missing: readonly ChecklistItemView[];
}

/** The discipline codes with a checklist are the server's; anything else has none. */
export function checklistItems(discipline: string): ChecklistItemView[] | null {
  const checklist = checklistFor(discipline);
  return checklist ? checklist.items.map(({ id, label, prompt }) => ({ id, label, prompt })) : null;
}

/**
 * The note's text as one transcript: its sections in SOAP order, each on its own line (a
 * line break ends a sentence for the matcher's evidence, so no section's words run into the
 * next one's).
 */
export function noteText(sections: Partial<Record<SoapSection, string>>): string {
  return (['subjective', 'objective', 'assessment', 'plan'] as const)
    .map((s) => sections[s]?.trim() ?? '')
    .filter((t) => t !== '')
    .join('\n');
}

/** The match of `text` against `discipline`'s checklist; null when the discipline has none. */
export function checkNote(discipline: string, text: string, source: VisitChecklist['source']): VisitChecklist | null {
  const checklist = checklistFor(discipline);
  if (!checklist) return null;
  const matched = matchChecklist(checklist, text);
  return {
    discipline: checklist.discipline,
    version: checklist.version,
    source,
    matched_items: matched,
    missing: checklist.items.filter((i) => !matched[i.id]?.matched).map(({ id, label, prompt }) => ({ id, label, prompt })),
  };
}
