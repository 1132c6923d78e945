import type { TranscriptSegment } from './types.ts';

/**
 * Joins timed pieces of speech into one transcript and records where each piece sits in it
 * (`char_start`/`char_end`, end exclusive), so the note's source map can point from a
 * sentence to its audio time.
 */
export function joinSegments(pieces: readonly { start_ms: number; end_ms: number; text: string }[]): { text: string; segments: TranscriptSegment[] } {
  let text = '';
  const segments: TranscriptSegment[] = [];
  for (const p of pieces) {
    const piece = p.text.replace(/\s+/g, ' ').trim();
    if (!piece) continue;
    if (text) text += ' ';
    const charStart = text.length;
    text += piece;
    segments.push({ start_ms: Math.max(0, Math.round(p.start_ms)), end_ms: Math.max(0, Math.round(p.end_ms)), text: piece, char_start: charStart, char_end: text.length });
  }
  return { text, segments };
}
