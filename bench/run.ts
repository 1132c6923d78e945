/**
 * `npm run bench`: every bench/*.ts script except this one, one after another, each in its
 * own process (a benchmark must not share a heap or an event loop with the previous one).
 * Extra arguments filter scripts by substring: `npm run bench -- auth`; arguments starting
 * with `--` (e.g. `--quick`, CI-sized runs of the sync benches) are passed to every script
 * instead. Each script prints its table and, as its last line, a JSON result.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.dirname(fileURLToPath(import.meta.url));
const self = path.basename(fileURLToPath(import.meta.url));
const filters = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flags = process.argv.slice(2).filter((a) => a.startsWith('--'));
/** A script that runs longer than this is stopped: benchmarks are bounded. */
const SCRIPT_TIMEOUT_MS = 5 * 60_000;

const scripts = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && f !== self)
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (scripts.length === 0) {
  console.error(`no bench scripts match ${filters.join(' ')}`);
  process.exit(1);
}

let failures = 0;
for (const script of scripts) {
  console.error(`\n== ${script}`);
  const code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(dir, script), ...flags], { stdio: 'inherit' });
    const timer = setTimeout(() => {
      console.error(`${script} ran past ${SCRIPT_TIMEOUT_MS / 1000} s; stopping it`);
      child.kill('SIGTERM');
    }, SCRIPT_TIMEOUT_MS);
    child.on('exit', (c, signal) => {
      clearTimeout(timer);
      resolve(c ?? (signal ? 1 : 0));
    });
  });
  if (code !== 0) {
    failures++;
    console.error(`${script} failed (exit ${code})`);
  }
}
process.exit(failures === 0 ? 0 : 1);
