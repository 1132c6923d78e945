/** Shared set-up of the pipeline suites: a clinician with a visit today, spoken audio, the multipart upload. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { API, type TestServer } from '../../../helpers/test-server.ts';
import { createPatient, scheduleVisit, utcClinician, type User } from '../../visits/visit-fixtures.ts';

export type { User };

export const today = () => new Date().toISOString().slice(0, 10);

/** A clinician (UTC) with one visit today. */
export async function clinicianWithVisit(server: TestServer): Promise<{ user: User; visit: string }> {
  const user = await utcClinician(server);
  const patient = await createPatient(server, user);
  const visit = await scheduleVisit(server, user, { patient_uuid: patient.uuid, visit_date: today(), start_time: '09:00' });
  return { user, visit };
}

const speechDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fc-ai-speech-'));
process.on('exit', () => fs.rmSync(speechDir, { recursive: true, force: true }));

/** A WAV of `text` spoken by espeak-ng (a few seconds: pocketsphinx time stays small). */
export function spokenWav(text: string, name = 'dictation'): Buffer {
  const file = path.join(speechDir, `${name}.wav`);
  if (!fs.existsSync(file)) execFileSync('espeak-ng', ['-s', '150', '-w', file, text]);
  return fs.readFileSync(file);
}

export interface UploadFields {
  readonly schedule_uuid?: string;
  readonly discipline?: string;
  readonly encounter_type?: string;
  readonly upload_id?: string;
}

/** POST /ai/process-audio as the app sends it: text parts, then the `audio` file part. */
export async function processAudio(server: TestServer, token: string, fields: UploadFields, audio: Buffer | null, filename = 'visit.wav') {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) form.append(k, v);
  if (audio) form.append('audio', new Blob([new Uint8Array(audio)], { type: 'audio/wav' }), filename);
  const res = await fetch(`${server.url}${API}/ai/process-audio`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
  const text = await res.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    // raw text kept
  }
  return { status: res.status, body };
}

export async function submitted(server: TestServer, token: string, fields: UploadFields, audio: Buffer): Promise<string> {
  const res = await processAudio(server, token, fields, audio);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.match(res.body.data.transcription_uuid, /^[0-9a-f-]{36}$/);
  return res.body.data.transcription_uuid as string;
}

export async function statusOf(server: TestServer, token: string, id: string) {
  return server.api('GET', `/ai/status/${id}`, { token });
}
