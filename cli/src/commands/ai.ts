/**
 * `fieldchart ai …`: the AI documentation pipeline's pieces, run locally. No server and no
 * database: `generate-soap` reads a transcript on stdin and runs the configured note
 * generator (AI_NOTES_URL, or the embedded local structurer) with the same post-processing
 * as the pipeline.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { CHECKLIST_DISCIPLINES } from '@fieldchart/schema/checklists';
import {
  AudioProcessingError,
  createNoteGenerator,
  createSpeechToText,
  NO_ENGINE_MESSAGE,
  NoteGenerationError,
  normaliseToPcm16kMono,
  SNIFF_BYTES,
  sniffAudio,
  SttError,
  type GeneratedNote,
  type Transcript,
} from '@fieldchart/server';
import { CliError, EXIT } from '../errors.ts';
import { configFromEnvironment, type GlobalOptions } from '../run.ts';

const SECTIONS = ['subjective', 'objective', 'assessment', 'plan'] as const;

async function readStdin(): Promise<string> {
  // a terminal on stdin means nothing was piped: say how to use it instead of waiting
  if (process.stdin.isTTY) throw new CliError('pipe a transcript on stdin, e.g. `fieldchart ai generate-soap --discipline PT < dictation.txt`', 'no_input', EXIT.usage);
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

function render(note: GeneratedNote): string {
  const out: string[] = [];
  for (const s of SECTIONS) {
    out.push(`${s.toUpperCase()} (confidence ${note.confidence_summary[s].toFixed(2)})`);
    out.push(note.generated_soap[s] === '' ? '  -' : `  ${note.generated_soap[s]}`);
  }
  const vitals = Object.entries(note.vital_signs);
  out.push('VITAL SIGNS', vitals.length === 0 ? '  -' : vitals.map(([k, v]) => `  ${k}: ${String(v)}`).join('\n'));
  out.push('TO VERIFY', note.verification_flags.length === 0 ? '  -' : note.verification_flags.map((f) => `  - ${f}`).join('\n'));
  out.push('NOT MENTIONED', note.not_mentioned.length === 0 ? '  -' : note.not_mentioned.map((f) => `  - ${f}`).join('\n'));
  out.push(`(generator: ${note.generator})`);
  return `${out.join('\n')}\n`;
}

const clock = (ms: number) => {
  const m = Math.floor(ms / 60_000);
  const s = (ms % 60_000) / 1000;
  return `${String(m).padStart(2, '0')}:${s.toFixed(2).padStart(5, '0')}`;
};

/**
 * `ai transcribe`: the pipeline's first half on a local file — the type from the bytes,
 * ffprobe's duration check and ffmpeg's 16 kHz mono PCM, then the configured STT engine.
 */
async function transcribeFile(file: string): Promise<{ transcript: Transcript; durationMs: number }> {
  const config = configFromEnvironment();
  const stt = createSpeechToText(config.ai.stt);
  if (!stt) throw new CliError(NO_ENGINE_MESSAGE, 'stt_not_configured', EXIT.config);
  let head: Buffer;
  try {
    const handle = await fs.open(file, 'r');
    try {
      head = Buffer.alloc(SNIFF_BYTES);
      const { bytesRead } = await handle.read(head, 0, SNIFF_BYTES, 0);
      head = head.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  } catch {
    throw new CliError(`cannot read ${file}`, 'unreadable_file', EXIT.usage);
  }
  const format = sniffAudio(head);
  if (!format) throw new CliError(`${file} is not m4a, wav or mp3 audio`, 'not_audio', EXIT.usage);
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'fieldchart-transcribe-'));
  try {
    const pcm = path.join(dir, 'speech.wav');
    let durationMs: number;
    try {
      ({ durationMs } = await normaliseToPcm16kMono(path.resolve(file), pcm, {
        format,
        maxDurationMs: config.audio.maxDurationSeconds * 1000,
        timeoutMs: config.ai.pipeline.normaliseTimeoutMs,
      }));
    } catch (err) {
      if (err instanceof AudioProcessingError) throw new CliError(err.message, `audio_${err.reason}`, EXIT.failed);
      throw err;
    }
    try {
      return { transcript: await stt.transcribe(pcm), durationMs };
    } catch (err) {
      if (err instanceof SttError) throw new CliError(err.clinicianMessage, err.code, EXIT.failed);
      throw err;
    }
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

export function registerAi(program: Command): void {
  const ai = program.command('ai').description('AI documentation: note generation (and transcription) run locally, without a server');

  ai.command('generate-soap')
    .description(
      'Read a transcript on stdin and print the SOAP note the pipeline would generate: generated_soap, source_map, ' +
        'confidence_summary, verification_flags, not_mentioned, vital_signs. Uses AI_NOTES_URL when set, else the local structurer.',
    )
    .requiredOption('--discipline <code>', `the clinician's discipline (${CHECKLIST_DISCIPLINES.join(', ')})`)
    .option('--encounter-type <type>', 'the encounter type', 'daily_note')
    .action(async (opts: { discipline: string; encounterType: string }, cmd: Command) => {
      const global = cmd.optsWithGlobals<GlobalOptions>();
      const discipline = opts.discipline.trim().toUpperCase();
      if (!CHECKLIST_DISCIPLINES.includes(discipline)) {
        throw new CliError(`unknown discipline "${opts.discipline}"; one of ${CHECKLIST_DISCIPLINES.join(', ')}`, 'unknown_discipline', EXIT.usage);
      }
      const transcript = await readStdin();
      if (transcript.trim() === '') throw new CliError('the transcript on stdin is empty', 'empty_transcript', EXIT.usage);
      const config = configFromEnvironment();
      const generator = createNoteGenerator(config.ai.notes);
      let note: GeneratedNote;
      try {
        note = await generator.generate({ transcript, discipline, encounterType: opts.encounterType });
      } catch (err) {
        if (err instanceof NoteGenerationError) throw new CliError(err.clinicianMessage, 'generation_failed', EXIT.failed);
        throw err;
      }
      const completed = {
        status: 'completed' as const,
        generated_soap: note.generated_soap,
        source_map: note.source_map,
        confidence_summary: note.confidence_summary,
        verification_flags: note.verification_flags,
        not_mentioned: note.not_mentioned,
        vital_signs: note.vital_signs,
        generator: note.generator,
      };
      process.stdout.write(global.json ? `${JSON.stringify(completed, null, 2)}\n` : render(note));
    });

  ai.command('transcribe')
    .description(
      'Transcribe an audio file (m4a, wav or mp3) with the configured speech-to-text engine (STT_URL, or pocketsphinx offline) ' +
        'and print the transcript with timings; no server needed.',
    )
    .argument('<file>', 'the recording')
    .action(async (file: string, _opts: unknown, cmd: Command) => {
      const global = cmd.optsWithGlobals<GlobalOptions>();
      const { transcript, durationMs } = await transcribeFile(file);
      if (global.json) {
        process.stdout.write(`${JSON.stringify({ engine: transcript.engine, duration_ms: durationMs, text: transcript.text, segments: transcript.segments }, null, 2)}\n`);
        return;
      }
      const lines = transcript.segments.map((seg) => `[${clock(seg.start_ms)} → ${clock(seg.end_ms)}] ${seg.text}`);
      if (lines.length === 0) lines.push(transcript.text === '' ? '(no speech recognised)' : transcript.text);
      process.stdout.write(`${lines.join('\n')}\n(engine: ${transcript.engine}, audio ${clock(durationMs)})\n`);
    });
}
