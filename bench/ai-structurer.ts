/**
 * The local clinical structurer's cost: milliseconds to turn a transcript into a note
 * (clauses, sections, vitals, source map, checklist), for a 5-minute dictation (~750 words,
 * punctuated as a Whisper-style engine writes it, and unpunctuated as pocketsphinx does) and
 * a long one, and the event-loop delay other requests see while the paced generator runs. Built from the labelled dictations of test/fixtures/dictations. `--quick` runs
 * fewer rounds. Last line: the JSON result.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createLocalStructurer, structureNote } from '../server/src/services/ai/notes/index.ts';
import { loadDictations } from '../test/server/ai/notes/dictations.ts';

const quick = process.argv.includes('--quick');
const ROUNDS = quick ? 10 : 50;

const pool = loadDictations().map((d) => d.transcript);
function dictation(words: number, punctuated: boolean): string {
  const out: string[] = [];
  let n = 0;
  for (let i = 0; n < words; i += 1) {
    const t = pool[i % pool.length]!;
    out.push(t);
    n += t.split(/\s+/).length;
  }
  const text = out.join(' ');
  return punctuated ? text : text.toLowerCase().replace(/[.,;:!?]/g, '');
}

interface Row {
  readonly name: string;
  readonly words: number;
  readonly p50_ms: number;
  readonly p95_ms: number;
}

function measure(name: string, transcript: string): Row {
  const times: number[] = [];
  for (let r = 0; r < ROUNDS + 3; r += 1) {
    const t0 = performance.now();
    structureNote({ transcript, discipline: 'PT', encounterType: 'daily_note' });
    if (r >= 3) times.push(performance.now() - t0); // the first rounds warm the regex caches and the JIT
  }
  times.sort((a, b) => a - b);
  const q = (p: number) => Math.round(times[Math.min(times.length - 1, Math.floor(p * times.length))]! * 100) / 100;
  return { name, words: transcript.split(/\s+/).length, p50_ms: q(0.5), p95_ms: q(0.95) };
}

const rows = [
  measure('5-minute dictation, punctuated', dictation(750, true)),
  measure('5-minute dictation, no punctuation', dictation(750, false)),
  measure('30-minute dictation, punctuated', dictation(4500, true)),
];
// What other requests feel while the in-process worker structures a 30-minute dictation.
const long = dictation(4500, true);
const lag = monitorEventLoopDelay({ resolution: 1 });
lag.enable();
for (let r = 0; r < (quick ? 3 : 10); r += 1) await createLocalStructurer().generate({ transcript: long, discipline: 'PT', encounterType: 'daily_note' });
lag.disable();
const eventLoop = { p99_ms: Math.round(lag.percentile(99) / 1e4) / 100, max_ms: Math.round(lag.max / 1e4) / 100 };

process.stderr.write(`ai-structurer: ${ROUNDS} rounds each\n`);
for (const r of rows) process.stderr.write(`${r.name.padEnd(36)} ${String(r.words).padStart(6)} words  p50 ${r.p50_ms} ms  p95 ${r.p95_ms} ms\n`);
process.stderr.write(`event-loop delay while generating (paced): p99 ${eventLoop.p99_ms} ms, max ${eventLoop.max_ms} ms\n`);
console.log(JSON.stringify({ bench: 'ai-structurer', rounds: ROUNDS, rows, eventLoop }));
