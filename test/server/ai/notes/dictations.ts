/** Reads the labelled dictations of test/fixtures/dictations (format in its README). */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export type Label = 'subjective' | 'objective' | 'assessment' | 'plan' | 'aside';

export interface LabelledSegment {
  readonly label: Label;
  readonly text: string;
  readonly char_start: number;
  readonly char_end: number;
}

export interface Dictation {
  readonly id: string;
  readonly discipline: string;
  readonly styles: readonly string[];
  readonly transcript: string;
  readonly segments: readonly LabelledSegment[];
  readonly vitals: Readonly<Record<string, string>>;
  readonly mustNotContain: readonly string[];
}

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../fixtures/dictations');
const LABELS: Record<string, Label> = { S: 'subjective', O: 'objective', A: 'assessment', P: 'plan', X: 'aside' };

/** `sub`: 'holdout' reads the dictations written after the structurer was tuned. */
export function loadDictations(sub = ''): Dictation[] {
  const out: Dictation[] = [];
  const from = path.join(dir, sub);
  for (const file of fs.readdirSync(from).filter((f) => f.endsWith('.txt')).sort()) {
    const blocks = fs.readFileSync(path.join(from, file), 'utf8').split(/^=== /m).slice(1);
    for (const block of blocks) {
      const [head, ...lines] = block.split('\n');
      const [id, styleText] = head!.split('|').map((s) => s.trim());
      const segments: LabelledSegment[] = [];
      const vitals: Record<string, string> = {};
      const mustNotContain: string[] = [];
      let transcript = '';
      for (const line of lines) {
        const m = /^([SOAPXVN]): (.*)$/.exec(line.trim());
        if (!m) continue;
        const [, tag, text] = m as unknown as [string, string, string];
        if (tag === 'V') {
          for (const kv of text.split(/\s+/)) {
            const [k, v] = kv.split('=');
            vitals[k!] = v!;
          }
        } else if (tag === 'N') {
          mustNotContain.push(text);
        } else {
          if (transcript) transcript += ' ';
          segments.push({ label: LABELS[tag]!, text, char_start: transcript.length, char_end: transcript.length + text.length });
          transcript += text;
        }
      }
      const discipline = id!.split('-')[0]!.toUpperCase();
      out.push({ id: id!, discipline, styles: (styleText ?? '').split(/\s+/), transcript, segments, vitals, mustNotContain });
    }
  }
  return out;
}
