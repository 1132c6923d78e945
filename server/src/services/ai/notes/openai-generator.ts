/**
 * Note generation by an OpenAI-compatible chat-completions endpoint (OpenAI, Azure-style
 * gateways, vLLM, llama.cpp server, Ollama's /v1). The model is asked for a JSON object of
 * four arrays of sentences copied from the transcript (`response_format` with a JSON
 * schema); whatever it answers goes through the same post-processing as the local
 * structurer, so an invented sentence is removed and flagged, and an answer that is not
 * such an object is a NoteGenerationError, never a crash.
 */
import { z } from 'zod';
import { postProcessSteps, runStepsPaced, SECTIONS } from './post-process.ts';
import { NoteGenerationError, type GeneratedNote, type NoteGenerator, type NoteInput } from './types.ts';

export interface OpenAiNotesOptions {
  /** base URL of the API, e.g. https://api.openai.com/v1; the client posts to {url}/chat/completions */
  readonly url: string;
  readonly apiKey: string | null;
  readonly model: string;
  readonly timeoutMs: number;
  readonly fetch?: typeof fetch;
}

export const SYSTEM_PROMPT = [
  'You turn a home-health clinician’s dictated visit transcript into a SOAP note.',
  'Rules, all mandatory:',
  '1. Be strictly extractive: every sentence you output must be a sentence or clause of the transcript, copied word for word.',
  '   You may only drop filler words (um, uh, okay so), words addressed to the patient, and a value the clinician corrected ("scratch that").',
  '   Never add, infer, summarise, translate numbers or expand abbreviations. Never invent findings, vital signs, doses or plans.',
  '2. Put each sentence in exactly one section: subjective (what the patient or caregiver reports), objective (measurements,',
  '   vital signs, interventions performed, observed findings), assessment (clinical judgement: tolerance, progress toward goals,',
  '   skilled need, homebound status, risks) or plan (next visits, frequency, goals to work on, coordination).',
  '3. Leave a section as an empty array when the transcript has nothing for it.',
  'Answer with the JSON object only.',
].join('\n');

export const NOTE_JSON_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  required: [...SECTIONS],
  properties: Object.fromEntries(SECTIONS.map((s) => [s, { type: 'array', items: { type: 'string' } }])),
} as const;

const completion = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullable().optional(), refusal: z.string().nullable().optional() }),
        finish_reason: z.string().nullable().optional(),
      }),
    )
    .min(1),
});

const noteShape = z.object({
  subjective: z.array(z.string()),
  objective: z.array(z.string()),
  assessment: z.array(z.string()),
  plan: z.array(z.string()),
});

export function createOpenAiNoteGenerator(opts: OpenAiNotesOptions): NoteGenerator {
  const name = `openai:${opts.model}`;
  const endpoint = `${opts.url.replace(/\/+$/, '')}/chat/completions`;
  const doFetch = opts.fetch ?? fetch;
  return {
    name,
    async generate(input: NoteInput, signal?: AbortSignal): Promise<GeneratedNote> {
      const timeout = AbortSignal.timeout(opts.timeoutMs);
      const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
      const body = {
        model: opts.model,
        temperature: 0,
        messages: [
          { role: 'system', content: SYSTEM_PROMPT },
          {
            role: 'user',
            content: `Discipline: ${input.discipline}\nEncounter type: ${input.encounterType}\nTranscript:\n"""\n${input.transcript}\n"""`,
          },
        ],
        response_format: { type: 'json_schema', json_schema: { name: 'soap_note', strict: true, schema: NOTE_JSON_SCHEMA } },
      };
      let res: Response;
      let text: string;
      try {
        res = await doFetch(endpoint, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json',
            ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}),
          },
          body: JSON.stringify(body),
          signal: combined,
        });
        text = await res.text();
      } catch (err) {
        if (signal?.aborted) throw err;
        if (timeout.aborted) {
          throw new NoteGenerationError(`The note service did not answer within ${Math.round(opts.timeoutMs / 1000)} s; retry later.`, true, { cause: err });
        }
        throw new NoteGenerationError('The note service could not be reached; retry later.', true, { cause: err });
      }
      if (res.status === 401 || res.status === 403) {
        throw new NoteGenerationError('The note service refused the server’s credentials (AI_NOTES_API_KEY); ask your administrator.', false);
      }
      if (res.status === 429 || res.status >= 500) {
        throw new NoteGenerationError(`The note service is unavailable (HTTP ${res.status}); retry later.`, true);
      }
      if (!res.ok) throw new NoteGenerationError(`The note service rejected the request (HTTP ${res.status}).`, false);
      let parsed: z.infer<typeof noteShape>;
      try {
        const c = completion.parse(JSON.parse(text));
        const msg = c.choices[0]!.message;
        if (msg.refusal) throw new NoteGenerationError('The note service declined to write this note; write it by hand or retry.', false);
        parsed = noteShape.parse(JSON.parse(msg.content ?? ''));
      } catch (err) {
        if (err instanceof NoteGenerationError) throw err;
        // the provider's text is not logged or echoed: it may hold transcript words
        throw new NoteGenerationError('The note service answered with something that is not a SOAP note; retry.', true, { cause: new Error('malformed completion') });
      }
      return runStepsPaced(postProcessSteps(input, {
        generator: name,
        sections: {
          subjective: parsed.subjective.map((t) => ({ text: t })),
          objective: parsed.objective.map((t) => ({ text: t })),
          assessment: parsed.assessment.map((t) => ({ text: t })),
          plan: parsed.plan.map((t) => ({ text: t })),
        },
      }), signal);
    },
  };
}
