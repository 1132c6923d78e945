/**
 * The OpenAI-compatible note generator against a local stand-in of the chat-completions
 * protocol on 127.0.0.1: the request it sends (path, Bearer header, model, response_format
 * with the JSON schema, the transcript in the prompt), and how it handles what comes back —
 * a faithful note, invented sentences, malformed JSON, a wrong shape, a refusal, HTTP
 * errors and a timeout — as flags or NoteGenerationError, never a crash.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { loadConfig } from '@fieldchart/server';
import { createNoteGenerator, NoteGenerationError, type NoteGenerator } from '../../../../server/src/services/ai/notes/index.ts';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: any;
}

type Behaviour = (req: Seen, res: http.ServerResponse) => void;

let server: http.Server;
let base: string;
let behaviour: Behaviour;
const seen: Seen[] = [];
const sockets = new Set<import('node:net').Socket>();

const completionOf = (content: string) => ({
  id: 'chatcmpl-test',
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
});
const json = (res: http.ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
};

before(async () => {
  server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const s: Seen = { method: req.method!, url: req.url!, headers: req.headers, body: raw ? JSON.parse(raw) : null };
      seen.push(s);
      behaviour(s, res);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
after(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => server.close(r));
});

const TRANSCRIPT =
  'Patient reports her knee pain is 3/10 today. Ambulated 150 feet with rolling walker and CGA. ' +
  'BP 132/80, heart rate 76. Patient tolerated treatment well. Plan to continue 2x week.';
const input = { transcript: TRANSCRIPT, discipline: 'PT', encounterType: 'daily_note' };

function generator(env: Record<string, string> = {}): NoteGenerator {
  const config = loadConfig({ NODE_ENV: 'test', AI_NOTES_URL: base, AI_NOTES_API_KEY: 'sk-test-123', AI_NOTES_MODEL: 'test-model', ...env });
  return createNoteGenerator(config.ai.notes);
}

async function rejection(p: Promise<unknown>): Promise<NoteGenerationError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof NoteGenerationError, `expected NoteGenerationError, got ${String(err)}`);
    assert.ok(!err.clinicianMessage.includes('knee'), 'no transcript text in the message');
    return err;
  }
  assert.fail('expected a NoteGenerationError');
}

test('unset AI_NOTES_URL: the local structurer', () => {
  const g = createNoteGenerator(loadConfig({ NODE_ENV: 'test' }).ai.notes);
  assert.equal(g.name, 'local-structurer');
});

test('a faithful answer: request shape, Bearer header, and the note post-processed with spans', async () => {
  seen.length = 0;
  behaviour = (_req, res) =>
    json(
      res,
      200,
      completionOf(
        JSON.stringify({
          subjective: ['Patient reports her knee pain is 3/10 today.'],
          objective: ['Ambulated 150 feet with rolling walker and CGA.', 'BP 132/80, heart rate 76.'],
          assessment: ['Patient tolerated treatment well.'],
          plan: ['Plan to continue 2x week.'],
        }),
      ),
    );
  const g = generator();
  assert.equal(g.name, 'openai:test-model');
  const note = await g.generate(input);
  assert.equal(seen.length, 1);
  const req = seen[0]!;
  assert.equal(req.method, 'POST');
  assert.equal(req.url, '/v1/chat/completions');
  assert.equal(req.headers.authorization, 'Bearer sk-test-123');
  assert.match(String(req.headers['content-type']), /application\/json/);
  assert.equal(req.body.model, 'test-model');
  assert.equal(req.body.response_format.type, 'json_schema');
  assert.equal(req.body.response_format.json_schema.strict, true);
  assert.deepEqual(req.body.response_format.json_schema.schema.required, ['subjective', 'objective', 'assessment', 'plan']);
  assert.equal(req.body.messages[0].role, 'system');
  assert.match(req.body.messages[0].content, /extractive/i);
  assert.ok(req.body.messages[1].content.includes(TRANSCRIPT), 'the transcript is sent');

  assert.equal(note.generator, 'openai:test-model');
  assert.equal(note.generated_soap.objective, 'Ambulated 150 feet with rolling walker and CGA. BP 132/80, heart rate 76.');
  for (const entries of Object.values(note.source_map)) {
    for (const e of entries) {
      assert.ok(!e.unsupported);
      assert.ok(TRANSCRIPT.slice(e.char_start, e.char_end).includes(e.sentence.replace(/\.$/, '')), e.sentence);
    }
  }
  assert.deepEqual(note.vital_signs, { blood_pressure: '132/80', heart_rate: 76, pain: 3 });
  assert.ok(note.not_mentioned.includes('Homebound status'));
});

test('invented sentences are removed from the text, flagged, and marked unsupported', async () => {
  behaviour = (_req, res) =>
    json(
      res,
      200,
      completionOf(
        JSON.stringify({
          subjective: ['Patient reports her knee pain is 3/10 today.', 'Patient reports chest pain radiating to the left arm.'],
          objective: ['Ambulated 150 feet with rolling walker and CGA.', 'Oxygen saturation 88% on room air.'],
          assessment: ['Patient tolerated treatment well.'],
          plan: ['Start metoprolol 25 mg twice daily.'],
        }),
      ),
    );
  const note = await generator().generate(input);
  assert.equal(note.generated_soap.subjective, 'Patient reports her knee pain is 3/10 today.');
  assert.equal(note.generated_soap.objective, 'Ambulated 150 feet with rolling walker and CGA.');
  assert.equal(note.generated_soap.plan, '');
  const all = Object.values(note.generated_soap).join(' ');
  for (const invented of ['chest pain', '88%', 'metoprolol']) assert.ok(!all.includes(invented), invented);
  const unsupported = Object.values(note.source_map).flat().filter((e) => e.unsupported);
  assert.equal(unsupported.length, 3);
  assert.equal(note.verification_flags.filter((f) => f.startsWith('Removed, not found in the transcript')).length, 3);
  assert.ok(!('oxygen_saturation' in note.vital_signs), 'no vital sign from an invented sentence');
});

test('malformed JSON, a wrong shape, a refusal: NoteGenerationError, not a crash', async () => {
  behaviour = (_req, res) => json(res, 200, '{"choices": [ {"message": ');
  let err = await rejection(generator().generate(input));
  assert.equal(err.retryable, true);

  behaviour = (_req, res) => json(res, 200, completionOf('{"subjective": "not an array"}'));
  err = await rejection(generator().generate(input));
  assert.match(err.clinicianMessage, /not a SOAP note/);

  behaviour = (_req, res) => json(res, 200, completionOf('Sure! Here is the note: Subjective: ...'));
  await rejection(generator().generate(input));

  behaviour = (_req, res) =>
    json(res, 200, { choices: [{ index: 0, message: { role: 'assistant', content: null, refusal: 'I cannot help with that.' }, finish_reason: 'stop' }] });
  err = await rejection(generator().generate(input));
  assert.equal(err.retryable, false);
});

test('HTTP errors: 401 is not retryable, 429 and 5xx are', async () => {
  behaviour = (_req, res) => json(res, 401, { error: { message: 'bad key' } });
  assert.equal((await rejection(generator().generate(input))).retryable, false);
  behaviour = (_req, res) => json(res, 400, { error: { message: 'bad request' } });
  assert.equal((await rejection(generator().generate(input))).retryable, false);
  behaviour = (_req, res) => json(res, 429, { error: { message: 'slow down' } });
  assert.equal((await rejection(generator().generate(input))).retryable, true);
  behaviour = (_req, res) => json(res, 503, { error: { message: 'overloaded' } });
  assert.equal((await rejection(generator().generate(input))).retryable, true);
});

test('a provider slower than AI_NOTES_TIMEOUT_MS fails as retryable; a caller abort propagates', async () => {
  behaviour = () => {
    /* never answers */
  };
  const started = Date.now();
  const err = await rejection(generator({ AI_NOTES_TIMEOUT_MS: '300' }).generate(input));
  assert.equal(err.retryable, true);
  assert.match(err.clinicianMessage, /did not answer/);
  assert.ok(Date.now() - started < 10_000);

  const ac = new AbortController();
  const p = generator().generate(input, ac.signal);
  ac.abort(new Error('job cancelled'));
  await assert.rejects(p, /job cancelled/);
});

test('no server listening: retryable NoteGenerationError', async () => {
  const config = loadConfig({ NODE_ENV: 'test', AI_NOTES_URL: 'http://127.0.0.1:9/v1', AI_NOTES_TIMEOUT_MS: '2000' });
  const err = await rejection(createNoteGenerator(config.ai.notes).generate(input));
  assert.equal(err.retryable, true);
});
