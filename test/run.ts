/**
 * `npm test`: every test/**\/*.test.ts file under node:test, each file in its own process.
 * With TEST_DATABASE_URL set, the database suites also run on PostgreSQL (see
 * helpers/backends.ts). Extra arguments filter files by substring: `npm test -- accounts`.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sweepLeftovers } from './helpers/leftovers.ts';
import { TEST_NODE_FLAGS } from './helpers/node-flags.ts';
import { bundledPath, bundleTests, sourceOfBundled } from './helpers/test-bundle.ts';

const root = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.join(root, '..');
const filters = process.argv.slice(2);

function walk(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'helpers' || e.name === 'fixtures' ? [] : walk(p);
    return e.name.endsWith('.test.ts') ? [p] : [];
  });
}

const files = walk(root)
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ')}`);
  process.exit(1);
}

console.log(
  `fieldchart tests: ${files.length} files; backends: pglite${process.env.TEST_DATABASE_URL ? ' + postgres' : ''}`,
);

// The CLI suites start `fieldchart` about a hundred times. Through tsx each start spends about a
// second compiling and resolving the sources; the production build (scripts/build.ts) starts in
// half the time. So the run builds it once, from the sources as they are now, and the test
// helpers start that (helpers/processes.ts, FIELDCHART_TEST_BUILD). A file run on its own with
// `node --test` has no build and uses the bin (`npx fieldchart`) instead; the bin itself stays
// tested by the suites that spawn it by name. Inside the checkout, so the external packages
// resolve from its node_modules.
const cacheDir = path.join(repoRoot, 'node_modules', '.cache');
const buildDir = path.join(cacheDir, `fieldchart-test-build-${process.pid}`);
// The test files themselves run bundled (helpers/test-bundle.ts); beside the build, not in it:
// scripts/build.ts empties its outdir first.
const bundleDir = path.join(cacheDir, `fieldchart-test-bundle-${process.pid}`);
// The test processes' temporary files (device databases, servers' data dirs, PGlite's test
// template, browser profiles) live in a directory of this run's, removed at its end. On disk:
// the same HEAD ran `npm test` in 1,413 s with them in os.tmpdir() and 1,652 s in /dev/shm,
// although one 40 MB copy is ten times faster there.
const tmpBase = process.env.TEST_TMPDIR ?? os.tmpdir();
const runTmp = path.join(tmpBase, `fieldchart-test-run-${process.pid}`);
// A run killed outright (SIGKILL) could not remove its build and files: the next run does, once
// that run's process is gone.
sweepLeftovers(cacheDir, 'fieldchart-test-build-');
sweepLeftovers(cacheDir, 'fieldchart-test-bundle-');
sweepLeftovers(tmpBase, 'fieldchart-test-run-');
fs.mkdirSync(runTmp, { recursive: true });
const buildStarted = performance.now();
const built = new Promise<number | null>((resolve) => {
  spawn(process.execPath, ['--import', 'tsx', path.join(repoRoot, 'scripts/build.ts'), '--outdir', buildDir], { stdio: ['ignore', 'ignore', 'inherit'] })
    .on('error', () => resolve(null))
    .on('exit', (code) => resolve(code));
});
const exitWhenDone = path.join(root, 'helpers', 'exit-when-done.ts');
const bundled = bundleTests(repoRoot, [...files, exitWhenDone], bundleDir).then(
  () => true,
  (err: unknown) => {
    console.error('bundling the test files failed (helpers/test-bundle.ts):', err);
    return false;
  },
);
const [buildStatus, bundleOk] = await Promise.all([built, bundled]);
if (buildStatus !== 0 || !bundleOk) {
  if (buildStatus !== 0) console.error('the build for the CLI suites failed (scripts/build.ts)');
  for (const dir of [buildDir, bundleDir, runTmp]) fs.rmSync(dir, { recursive: true, force: true });
  process.exit(1);
}
console.log(`built the CLI and server, and bundled the test files, for this run in ${((performance.now() - buildStarted) / 1000).toFixed(1)} s`);
const cleanUp = () => {
  for (const dir of [buildDir, bundleDir, runTmp]) fs.rmSync(dir, { recursive: true, force: true });
};
// Each file's time, start of its process to end of its tests (helpers/exit-when-done.ts): the
// slowest are printed last, and every file's is kept in lastTimings until the next run.
const timingsFile = path.join(cacheDir, `fieldchart-test-timings-${process.pid}.jsonl`);
// Files run one more at a time than the machine has cores: a file often waits (on timers, a
// browser, the servers and CLIs it starts, PostgreSQL), and with two at a time on two cores
// the cores were busy 84% of a run. Same HEAD, both backends, this machine (2026-12-05):
// two at a time 718 s, three 634 s (busy 96%), the same tests passing. At most four: every file
// may hold a server's pools on PostgreSQL, whose 100 connections the files share (44 at the most
// with three at a time).
const concurrency = process.env.TEST_CONCURRENCY ?? String(Math.min(os.availableParallelism() + 1, 4));
const lastTimings = path.join(cacheDir, 'fieldchart-test-timings.txt');
const SLOWEST_SHOWN = 15;

/** The machine's CPU ticks, busy and in all, from /proc/stat (null where there is none). */
function cpuTicks(): { busy: number; all: number } | null {
  try {
    const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]?.trim().split(/\s+/).slice(1, 8).map(Number) ?? [];
    const all = fields.reduce((a, b) => a + b, 0);
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
    return { busy: all - idle, all };
  } catch {
    return null;
  }
}
const ticksAtStart = cpuTicks();
/** The share of the machine's CPU in use since the run started: near 1, more at a time would not help. */
function machineBusy(): number | null {
  const now = cpuTicks();
  if (!now || !ticksAtStart || now.all === ticksAtStart.all) return null;
  return (now.busy - ticksAtStart.busy) / (now.all - ticksAtStart.all);
}
function printSlowest(): void {
  if (!fs.existsSync(timingsFile)) return;
  const rows = fs
    .readFileSync(timingsFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { file: string; ms: number; cpuMs?: number; childCpuMs?: number })
    .map((r) => ({ ...r, file: sourceOfBundled(repoRoot, bundleDir, r.file) }))
    .sort((a, b) => b.ms - a.ms);
  fs.rmSync(timingsFile, { force: true });
  if (rows.length === 0) return;
  const total = rows.reduce((sum, r) => sum + r.ms, 0);
  const cpu = rows.reduce((sum, r) => sum + (r.cpuMs ?? 0), 0);
  const childCpu = rows.reduce((sum, r) => sum + (r.childCpuMs ?? 0), 0);
  console.log(`\nslowest test files (of ${rows.length}; ${(total / 1000).toFixed(0)} s of test processes in all, ${concurrency} at a time):`);
  // Their own CPU beside each time (a file far below its time waits: on timers, other processes,
  // a browser), then the CPU of the processes it started: where the machine's cores went.
  const seconds = (ms: number | undefined, label: string) => (ms === undefined ? '' : `${(ms / 1000).toFixed(1).padStart(6)} s ${label}  `);
  const lines = rows.map((r) => `  ${(r.ms / 1000).toFixed(1).padStart(6)} s  ${seconds(r.cpuMs, 'CPU')}${seconds(r.childCpuMs, 'started')}${path.relative(repoRoot, r.file)}`);
  for (const line of lines.slice(0, SLOWEST_SHOWN)) console.log(line);
  const busy = machineBusy();
  console.log(`(the test processes' own CPU: ${(cpu / 1000).toFixed(0)} s; the processes they started: ${(childCpu / 1000).toFixed(0)} s${busy === null ? '' : `; the machine's ${os.cpus().length} cores were busy ${(busy * 100).toFixed(0)}% of the run`})`);
  fs.writeFileSync(lastTimings, `${lines.join('\n')}\n`);
  console.log(`(every file's: ${path.relative(repoRoot, lastTimings)})`);
}
const child = spawn(
  process.execPath,
  [
    // PGlite's WebAssembly compiled by V8's baseline compiler only (helpers/node-flags.ts); the
    // test runner hands these flags on to every file's process.
    ...TEST_NODE_FLAGS,
    // Stacks and `test at` lines name the TypeScript sources (helpers/test-bundle.ts).
    '--enable-source-maps',
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-reporter=spec',
    '--test-timeout=600000',
    // A file whose tests are done exits, whatever it left open (helpers/exit-when-done.ts).
    '--import',
    bundledPath(repoRoot, bundleDir, exitWhenDone),
    ...files.map((f) => bundledPath(repoRoot, bundleDir, f)),
  ],
  { stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test', TMPDIR: runTmp, FIELDCHART_TEST_BUILD: buildDir, FIELDCHART_TEST_TIMINGS: timingsFile } },
);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => {
  cleanUp();
  printSlowest();
  process.exit(code ?? (signal ? 1 : 0));
});
