/**
 * Loaded into every test file's process (test/run.ts): once the file's tests are done, the
 * process exits a second later, whatever it left open (a test that ran into its bound leaves
 * its client and proxy behind, and its file then held a slot until the 600 s bound; seen in
 * CI). The second is for the report: `--test-force-exit`, which did this before, exits as the
 * last results are still on their way to the runner, and the runner then counts fewer tests
 * than ran, without a word (nodejs/node#64833; seen here: seven of one file's results gone).
 * The exit code is the test runner's own (`process.exitCode`), so a failure still fails.
 */
import fs from 'node:fs';
import { after } from 'node:test';

/** How long the report has to reach the runner. A file that leaves nothing open exits at once. */
const REPORT_GRACE_MS = 1000;

/**
 * The CPU of the processes this one started and has reaped (the servers, CLIs and browsers a
 * suite spawns, and theirs): `cutime` and `cstime` of /proc/self/stat, in clock ticks of 10 ms.
 * Null where there is no /proc. A child still running at the end is not in it.
 */
function childrenCpuMs(): number | null {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'utf8');
    // The command name (field 2) may hold spaces; the fields after its ')' are fixed.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return null;
  }
}

/**
 * The file's time from its process's start to its tests' end, the CPU its process used
 * (every thread: PGlite's included) and the CPU of the processes it started, appended as a JSON
 * line to FIELDCHART_TEST_TIMINGS when set (test/run.ts prints the slowest files from it).
 */
function recordTime(): void {
  const to = process.env.FIELDCHART_TEST_TIMINGS;
  const file = process.argv[1];
  if (!to || !file) return;
  const cpu = process.cpuUsage();
  const childMs = childrenCpuMs();
  fs.appendFileSync(
    to,
    `${JSON.stringify({ file, ms: Math.round(performance.now()), cpuMs: Math.round((cpu.user + cpu.system) / 1000), ...(childMs === null ? {} : { childCpuMs: childMs }) })}\n`,
  );
}

// Only in a test file's own process: the runner's is the one without a test context.
if (process.env.NODE_TEST_CONTEXT) {
  after(() => {
    recordTime();
    setTimeout(() => process.exit(), REPORT_GRACE_MS).unref();
  });
}
