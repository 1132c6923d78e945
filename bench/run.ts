/**
 * `npm run bench`: every bench/*.ts script except this one, one after another, each in its
 * own process (a benchmark must not share a heap or an event loop with the previous one).
 * Extra arguments filter scripts by substring: `npm run bench -- auth`; arguments starting
 * with `--` (e.g. `--quick`, CI-sized runs of the sync benches) are passed to every script
 * instead. Each script prints its table and, as its last line, a JSON result.
 * `--table` (not passed on) also rewrites the performance table of bench/README.md from those
 * JSON lines (bench/support/perf-table.ts): `npm run bench -- --table` regenerates it;
 * with a filter, only the rows of the benches that ran are replaced.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { setting } from './support/measure.ts';
import { currentTable, performanceTable, withTable } from './support/perf-table.ts';

const dir = path.dirname(fileURLToPath(import.meta.url));
const self = path.basename(fileURLToPath(import.meta.url));
const filters = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flags = process.argv.slice(2).filter((a) => a.startsWith('--') && a !== '--table');
const writeTable = process.argv.includes('--table');
/**
 * A script that runs longer than this is stopped: benchmarks are bounded. 5 minutes by default;
 * a load-day at the issue's size (200 clinicians, 180 s, faults) needs `BENCH_SCRIPT_MINUTES=10`.
 */
const SCRIPT_TIMEOUT_MS = setting('BENCH_SCRIPT_MINUTES', 5, 1, 60) * 60_000;

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
const results: Record<string, unknown>[] = [];
for (const script of scripts) {
  console.error(`\n== ${script}`);
  let lastLine = '';
  const code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(dir, script), ...flags], { stdio: ['inherit', 'pipe', 'inherit'] });
    let pending = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      process.stdout.write(chunk);
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) lastLine = line;
    });
    child.stdout.on('end', () => {
      if (pending.trim()) lastLine = pending;
    });
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
  try {
    const parsed: unknown = JSON.parse(lastLine);
    if (parsed && typeof parsed === 'object') results.push(parsed as Record<string, unknown>);
  } catch {
    console.error(`${script}: its last line is not a JSON result; left out of the table`);
  }
}
if (writeTable) {
  const readme = path.join(dir, 'README.md');
  const machine = `${os.cpus().length} cores, ${os.cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}, load average ${(os.loadavg()[0] ?? 0).toFixed(2)} at the end, ${new Date().toISOString().slice(0, 10)}${flags.length > 0 ? `, flags ${flags.join(' ')}` : ''}`;
  const text = fs.readFileSync(readme, 'utf8');
  fs.writeFileSync(readme, withTable(text, performanceTable(results, machine, { previous: filters.length > 0 ? (currentTable(text) ?? undefined) : undefined })));
  console.error(`\nbench/README.md: performance table rewritten (${results.length} benches)`);
}
process.exit(failures === 0 ? 0 : 1);
