/**
 * `fieldchart ai generate-soap` as an operator runs it: a child process with a transcript
 * piped on stdin, no server, no database (the data dir stays empty).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { childEnv, repoRoot } from '../helpers/processes.ts';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fieldchart-ai-cli-'));
after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

function run(args: readonly string[], stdin: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(repoRoot, 'cli/bin/fieldchart.js'), ...args], {
      cwd: repoRoot,
      env: childEnv({ FIELDCHART_DATA_DIR: dataDir }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(stdin);
  });
}

const DICTATION =
  'Um okay so patient reports her knee pain is about a four out of ten today. ' +
  'Ambulated 15 feet with CGA, scratch that, it was 20 feet. Good job. ' +
  'BP one thirty two over eighty heart rate seventy two. Patient tolerated treatment well. Plan is to continue POC 2x week.';

test('--json prints the fields of a completed status, spans pointing into stdin', async () => {
  const r = await run(['--json', 'ai', 'generate-soap', '--discipline', 'PT'], DICTATION);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.status, 'completed');
  for (const k of ['generated_soap', 'source_map', 'confidence_summary', 'verification_flags', 'not_mentioned', 'vital_signs']) assert.ok(k in out, k);
  assert.equal(out.generated_soap.subjective, 'Patient reports her knee pain is about a four out of ten today.');
  assert.equal(out.generated_soap.objective, 'Ambulated 20 feet with CGA. BP one thirty two over eighty heart rate seventy two.');
  assert.equal(out.generated_soap.assessment, 'Patient tolerated treatment well.');
  assert.equal(out.generated_soap.plan, 'Plan is to continue POC 2x week.');
  assert.deepEqual(out.vital_signs, { blood_pressure: '132/80', heart_rate: 72, pain: 4 });
  const first = out.source_map.subjective[0];
  assert.equal(DICTATION.slice(first.char_start, first.char_end), 'patient reports her knee pain is about a four out of ten today.');
  assert.ok(out.not_mentioned.includes('Homebound status'));
  assert.equal(out.generator, 'local-structurer');
  assert.deepEqual(fs.readdirSync(dataDir), [], 'no database was opened');
});

test('plain output for people; PTA uses the PT checklist', async () => {
  const r = await run(['ai', 'generate-soap', '--discipline', 'pta'], DICTATION);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^SUBJECTIVE \(confidence \d\.\d\d\)\n {2}Patient reports/m);
  assert.match(r.stdout, /^VITAL SIGNS\n {2}blood_pressure: 132\/80/m);
  assert.match(r.stdout, /^NOT MENTIONED\n {2}- Homebound status/m);
});

test('bad usage exits 2: unknown discipline, missing --discipline, empty stdin', async () => {
  const unknown = await run(['ai', 'generate-soap', '--discipline', 'DDS'], DICTATION);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown discipline/);
  const missing = await run(['ai', 'generate-soap'], DICTATION);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--discipline/);
  const empty = await run(['ai', 'generate-soap', '--discipline', 'RN'], '  \n');
  assert.equal(empty.code, 2);
  assert.match(empty.stderr, /empty/);
});

test('an unreachable AI_NOTES_URL fails with exit 1 and a message, not a stack', async () => {
  const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [path.join(repoRoot, 'cli/bin/fieldchart.js'), 'ai', 'generate-soap', '--discipline', 'OT'], {
      cwd: repoRoot,
      env: childEnv({ FIELDCHART_DATA_DIR: dataDir, AI_NOTES_URL: 'http://127.0.0.1:9/v1', AI_NOTES_TIMEOUT_MS: '2000' }),
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('close', (code) => resolve({ code, stderr }));
    child.stdin.end(DICTATION);
  });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /could not be reached/);
  assert.ok(!r.stderr.includes('knee'), 'no transcript text on stderr');
  assert.ok(!/\n\s+at /.test(r.stderr), 'no stack trace');
});
