/**
 * Post-processing common to every note generator: each source-map entry must quote the
 * transcript at its span. An entry whose span is out of range or does not contain its
 * sentence is re-anchored when the sentence occurs verbatim elsewhere in the transcript, and
 * otherwise flagged `unsupported` (never silently kept); audio times come from the STT
 * segments the span overlaps; every unsupported sentence adds a verification flag.
 */
import type { TranscriptSegment } from '../stt/index.ts';
import { SOAP_SECTIONS, type NoteSourceEntry, type PipelineNote, type SoapSectionName } from './deps.ts';

const norm = (s: string) => s.toLowerCase().replace(/[^a-z0-9]+/g, ' ').trim();

export function anchorSourceMap(note: PipelineNote, transcript: string, segments: readonly TranscriptSegment[]): PipelineNote {
  const flags = new Set(note.verification_flags);
  const sourceMap = {} as Record<SoapSectionName, NoteSourceEntry[]>;
  for (const section of SOAP_SECTIONS) {
    sourceMap[section] = (note.source_map[section] ?? []).map((entry) => {
      const span = verifiedSpan(entry, transcript);
      if (!span) {
        flags.add(`unsupported_sentence:${section}`);
        const { start_ms: _s, end_ms: _e, ...rest } = entry;
        return { ...rest, unsupported: true };
      }
      const timed = timesOf(span.start, span.end, segments);
      return {
        ...entry,
        char_start: span.start,
        char_end: span.end,
        ...(timed ?? {}),
        ...(entry.unsupported ? { unsupported: true } : {}),
      };
    });
    if (sourceMap[section].some((e) => e.unsupported)) flags.add(`unsupported_sentence:${section}`);
  }
  return { ...note, source_map: sourceMap, verification_flags: [...flags] };
}

function verifiedSpan(entry: NoteSourceEntry, transcript: string): { start: number; end: number } | null {
  const { char_start: start, char_end: end } = entry;
  const target = norm(entry.sentence);
  if (!target) return null;
  if (Number.isInteger(start) && Number.isInteger(end) && start >= 0 && end > start && end <= transcript.length) {
    const quoted = norm(transcript.slice(start, end));
    // The generator cleans disfluencies, so the span may hold more words than the sentence;
    // every word of the sentence must still be there, in order.
    if (quoted === target || containsInOrder(quoted, target)) return { start, end };
  }
  const at = transcript.toLowerCase().indexOf(entry.sentence.toLowerCase());
  if (at >= 0) return { start: at, end: at + entry.sentence.length };
  return null;
}

function containsInOrder(haystack: string, needle: string): boolean {
  const words = haystack.split(' ');
  let i = 0;
  for (const w of needle.split(' ')) {
    while (i < words.length && words[i] !== w) i++;
    if (i >= words.length) return false;
    i++;
  }
  return true;
}

function timesOf(start: number, end: number, segments: readonly TranscriptSegment[]): { start_ms: number; end_ms: number } | null {
  const overlapping = segments.filter((s) => s.char_start < end && s.char_end > start && s.end_ms >= s.start_ms && s.end_ms > 0);
  if (overlapping.length === 0) return null;
  return {
    start_ms: Math.min(...overlapping.map((s) => s.start_ms)),
    end_ms: Math.max(...overlapping.map((s) => s.end_ms)),
  };
}
