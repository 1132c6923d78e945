/**
 * `fieldchart ai …`: the AI documentation pipeline's pieces, run locally. No server and no
 * database: `generate-soap` reads a transcript on stdin and runs the configured note
 * generator (AI_NOTES_URL, or the embedded local structurer) with the same post-processing
 * as the pipeline.
 */
import type { Command } from 'commander';
import { CHECKLIST_DISCIPLINES } from '@fieldchart/schema/checklists';
import { createNoteGenerator, NoteGenerationError, type GeneratedNote } from '../../../server/src/services/ai/notes/index.ts';
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
}
