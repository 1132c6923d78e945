/**
 * Real processes for the CLI and lifecycle suites: the server booted the way `npm start`
 * boots it (`node --import tsx server/src/main.ts`) and the CLI as built for production
 * (`npm test` builds it once per run) or the way `npx fieldchart` runs it, each with an environment built from nothing but what the
 * test passes (plus PATH and HOME), so the developer's own settings never leak in.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from './eventually.ts';
import { TEST_NODE_FLAGS } from './node-flags.ts';
import { API } from './test-server.ts';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The environment of a child: only the basics, NODE_ENV=test and what the caller adds. */
export function childEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR, NODE_ENV: 'test' };
  for (const [k, v] of Object.entries(env)) if (v !== undefined) base[k] = v;
  return base;
}

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface CliRun extends Exit {
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * The `fieldchart` a test starts: the production build `npm test` made for this run
 * (FIELDCHART_TEST_BUILD, see test/run.ts), else the bin `npx fieldchart` runs, which loads the
 * TypeScript sources through tsx.
 */
export function cliEntry(): string {
  const built = process.env.FIELDCHART_TEST_BUILD;
  return built ? path.join(built, 'cli/main.js') : path.join(repoRoot, 'cli/bin/fieldchart.js');
}

/** Runs `fieldchart <args>` to completion. */
export function runCli(args: readonly string[], env: Record<string, string | undefined>, timeoutMs = 120_000): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...TEST_NODE_FLAGS, cliEntry(), ...args], {
      cwd: repoRoot,
      env: childEnv(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Runs a command with `--json` and answers its parsed stdout; fails with its stderr otherwise. */
export async function cliJson<T = any>(args: readonly string[], env: Record<string, string | undefined>): Promise<T> {
  const run = await runCli(['--json', ...args], env);
  if (run.code !== 0) throw new Error(`fieldchart ${args.join(' ')} exited ${run.code}: ${run.stderr}`);
  return JSON.parse(run.stdout) as T;
}

export interface ServerProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** When spawn was called (performance.now()). */
  readonly spawnedAt: number;
  stdout(): string;
  stderr(): string;
  /** Parsed pino lines written so far. */
  logs(): Array<Record<string, any>>;
  /** Resolves with the exit; never rejects. */
  readonly exited: Promise<Exit>;
  /** The URL the server logs once it listens. */
  url(timeoutMs?: number): Promise<string>;
  /** Sends a signal (SIGTERM by default) and waits for the exit. */
  stop(signal?: NodeJS.Signals): Promise<Exit>;
}

const running = new Set<ChildProcess>();

/**
 * Starts the server: by default the production build `npm test` made for this run
 * (FIELDCHART_TEST_BUILD; a built server started in 1.1 s less CPU than the sources through
 * tsx), else, or with `{ via: 'npm-start' }`, `node --import tsx server/src/main.ts` as
 * `npm start` does (the lifecycle suite); with `{ via: 'cli' }` the same server through
 * `fieldchart serve`.
 */
export function spawnServer(
  env: Record<string, string | undefined>,
  opts: {
    /** `worker`: `fieldchart worker`, a job-queue node without HTTP (it logs `Fieldchart worker running`, never a URL). */
    via?: 'npm-start' | 'cli' | 'worker';
    /** A command the server runs under, e.g. `['unshare', '--pid', '--fork', …]`; `pid` is then that command's. */
    wrap?: readonly string[];
    /** A built server (`npm run build`'s dist/server/main.js), run by plain node. */
    entry?: string;
  } = {},
): ServerProcess {
  const spawnedAt = performance.now();
  const built = process.env.FIELDCHART_TEST_BUILD;
  const args = opts.entry
    ? [opts.entry]
    : opts.via === 'cli' || opts.via === 'worker'
      ? [cliEntry(), opts.via === 'cli' ? 'serve' : 'worker']
      : opts.via === undefined && built
        ? [path.join(built, 'server/main.js')]
        : ['--import', 'tsx', path.join(repoRoot, 'server/src/main.ts')];
  const [command, ...prefix] = opts.wrap && opts.wrap.length > 0 ? [...opts.wrap, process.execPath] : [process.execPath];
  const child = spawn(command as string, [...prefix, ...TEST_NODE_FLAGS, ...args], {
    cwd: repoRoot,
    env: childEnv({ HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<Exit>((resolve) => {
    child.on('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
  });
  let exit: Exit | null = null;
  void exited.then((e) => (exit = e));
  const logs = () =>
    stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as Record<string, any>];
        } catch {
          return [];
        }
      });
  return {
    child,
    pid: child.pid ?? -1,
    spawnedAt,
    stdout: () => stdout,
    stderr: () => stderr,
    logs,
    exited,
    url(timeoutMs = 60_000) {
      return eventually(
        () => {
          const line = logs().find((l) => typeof l.msg === 'string' && l.msg.startsWith('Fieldchart listening on '));
          if (line) return String(line.msg).split(' ')[3] as string;
          if (exit) throw new Error(`server exited (${exit.code ?? exit.signal}) before listening:\n${stderr}\n${stdout}`);
          throw new Error('server not listening yet');
        },
        { timeoutMs, intervalMs: 20 },
      );
    },
    async stop(signal = 'SIGTERM') {
      if (!exit) child.kill(signal);
      return exited;
    },
  };
}

/** Kills every server child still running (for `after`). */
export async function killAllServers(): Promise<void> {
  const waits = [...running].map((c) => new Promise<void>((resolve) => {
    c.once('exit', () => resolve());
    c.kill('SIGKILL');
  }));
  await Promise.all(waits);
}

/** A port nobody listens on right now (for measuring from spawn, before the server logs it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** The pid of a process that has already exited (for stale-lock tests). */
export async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid ?? 999_999;
}

/** One JSON request to a spawned server's API (its base URL), with an optional bearer token. */
export async function apiRequest(base: string, method: string, pathname: string, opts: { body?: unknown; token?: string } = {}) {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  const res = await fetch(base + API + pathname, { method, headers, ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}) });
  return { status: res.status, body: (await res.json()) as any };
}
