/** A documentation checklist for one discipline: what a payer expects a visit note to show. */
export interface ChecklistItem {
  /** Stable across versions: clients store it in `checked_items`. */
  readonly id: string;
  readonly label: string;
  /** The question put to the clinician when the transcript does not cover the item. */
  readonly prompt: string;
  /**
   * Case-insensitive regular-expression sources; the item is matched when any cue occurs in
   * the transcript. Written against spoken text (number words, abbreviations as said).
   */
  readonly cues: readonly string[];
}

export interface Checklist {
  /** The discipline whose checklist this is (PTA and COTA resolve to PT and OT). */
  readonly discipline: 'PT' | 'OT' | 'SLP' | 'RN';
  /** Bumped whenever items or cues change, so a stored match can say which list it used. */
  readonly version: string;
  readonly items: readonly ChecklistItem[];
}

export interface ChecklistEvidence {
  readonly char_start: number;
  readonly char_end: number;
  readonly text: string;
}

export interface ChecklistMatch {
  readonly matched: boolean;
  readonly evidence: ChecklistEvidence | null;
}
